#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kGlobalFlags[] = {
    {.commands = "",
     .names = "-h,--help",
     .value = "",
     .help = "print this help and exit",
     .man = R"roff(Print help and exit.
After a subcommand, print that subcommand's help.)roff"},
    {.commands = "",
     .names = "--version",
     .value = "",
     .help = "print the version and exit",
     .man = R"roff(Print
.B rlock 0.1.0
and exit 0.)roff"},
    {.commands = "",
     .names = "--url",
     .value = "URL",
     .help = "redis://[user[:pass]@]host[:port][/db], unix:///path[?db=N], "
             "redis-sentinel://H1,H2/MASTER, redis-cluster://H1,H2, redis-quorum://H1,H2,H3 "
             "(locks only); rediss... over TLS",
     .man = R"roff(The Redis server:
.BI redis:// \fR[\fPuser : password @\fR]\fPhost\fR[\fP: port\fR][\fP/ db\fR]\fP
or
.BI unix:// /path/to.sock\fR[\fP?db= N\fR]\fP\c
\&.
.BI rediss:// \fR...\fP
is the same over TLS (see
.BR TLS
below).
Default:
.BR RLOCK_URL ,
then
.BR REDIS_URL ,
then the config file key
.BR url ,
then
.BR redis://127.0.0.1:6379 .
A password written into the URL is visible in the process list; prefer
.B RLOCK_PASSWORD
or
.BR \-\-password\-file .
The userinfo ends at the URL's last
.BR @ ,
so a password may hold an unencoded
.B /
or
.BR @ .
.BI redis:// user @host
names the ACL user
.I user
without a password, which then comes from
.BR \-\-password\-file ,
.B RLOCK_PASSWORD
or the config file (else exit status 64); this follows RFC 3986 and most Redis
clients, while
.BR redis\-cli (1)
would take
.I user
for the password.
.BI redis://: password @host
is the default user's password.
An error about a malformed URL names the part that is wrong but never repeats
any of the URL, so no password reaches a terminal or a log.
.BI redis\-sentinel:// [user [: password ]@] host [: port ][, host [: port ]...]/ master [?db= N ]
(userinfo: the master's; the sentinels' own credentials come from the URL
parameters or config file keys
.B sentinel_user
and
.BR sentinel_password )
and
.BI redis\-cluster:// [user [: password ]@] host [: port ][, host [: port ]...]
name a Sentinel deployment (the master is asked of the sentinels in turn,
confirmed with ROLE, and found again after a lost connection, READONLY,
LOADING or MASTERDOWN) and a Redis Cluster (requests go to the next seed when
one refuses the connection or does not answer within half of
.BR \-\-timeout ,
follow MOVED and ASK;
TRYAGAIN and CLUSTERDOWN are retried within
.BR \-\-timeout ;
a slot's master that refuses the connection is dropped and the slot map
(CLUSTER SHARDS) asked of another node until its replica has taken over, within
.BR \-\-timeout ;
.B inspect
scans every master once).
A plain
.B redis://
URL of one cluster node is used as the cluster's seed (a notice under
.BR \-v ).
Waiters use sharded pub/sub (SSUBSCRIBE; the scripts SPUBLISH) on every Redis 7
server; on Redis 6 standalone, classic pub/sub; a cluster without sharded
pub/sub is refused (exit status 69).
On a cluster a waiter subscribes on its slot's master only (EXISTS on the
channel's name, in the same write, gets MOVED from a replica): a master just
demoted by a failover accepts SSUBSCRIBE as a replica but misses the new
master's messages until the new master learns of it.
A waiter asks another node once a second whether its master still is one: a
frozen (stopped) master keeps its subscribers after its replica took over.
.BI redis\-quorum:// [user [: password ]@] host [: port ], host [: port ], host [: port ][,...][/ db ]
names a quorum: 3, 5, 7 or 9 independent masters (an even number, fewer than 3,
more than 9, a member named twice or a URL parameter is refused, exit status
64), with the same password rules as one server.
Only locks run on it
.RB ( lock ,
.BR unlock ,
.BR "unlock \-\-force" ,
.BR exec ,
shared holds, several names at once, and
.BR inspect );
.BR sem ,
.BR latch ,
.BR limit ,
.B delay\-push
and
.B delay\-pop
have no sound majority semantics there and are refused with one line (exit
status 64) before anything is written, as are
.B \-\-sync\-replicas
and
.BR "\-\-layout redisson" .
See
.BR QUORUM .)roff",
     .completion = Completion::kPrefix,
     .choices = "redis:// rediss:// unix:// redis-sentinel:// rediss-sentinel:// "
                "redis-cluster:// rediss-cluster:// redis-quorum:// rediss-quorum://",
     .env = "RLOCK_URL",
     .config = "url"},
    {.commands = "",
     .names = "--password-file",
     .value = "FILE",
     .help = "read the password from FILE (mode 600)",
     .man = R"roff(Read the password from the first line of
.IR FILE .
The file is refused (exit status 64) if its group or others can read it; use
.BR "chmod 600" .
It must be a regular file of at most 4 KiB: a FIFO, a directory or a device is
refused at once (it is opened without blocking), as is a larger file.
Without this option the password comes from
.BR RLOCK_PASSWORD ,
else from the config file key
.BR password_file .)roff",
     .completion = Completion::kFile,
     .config = "password_file"},
    {.commands = "",
     .names = "--prefix",
     .value = "PREFIX",
     .help = "key prefix (default rlock:; may be empty)",
     .man = R"roff(Prefix of every key and channel name.
Default:
.BR RLOCK_PREFIX ,
then the config file key
.BR prefix ,
then
.BR rlock: .
Processes only see each other's locks when they use the same prefix.
An empty prefix
.RB ( "\-\-prefix ''" )
is honoured; a prefix with braces is refused (exit status 64), as it would split
one lock's keys over cluster slots.)roff",
     .env = "RLOCK_PREFIX",
     .config = "prefix"},
    {.commands = "",
     .names = "--connect-timeout",
     .value = "DUR",
     .help = "connect timeout",
     .man = R"roff(Timeout for connecting to the server over TCP or a unix socket.
Default: config file key
.BR connect_timeout ,
then
.BR 2s .)roff",
     .default_value = "2s",
     .config = "connect_timeout"},
    {.commands = "",
     .names = "--timeout",
     .value = "DUR",
     .help = "timeout of each request, its repeats and clean-up (default 5s; before lock and "
             "exec, never after: flock's --timeout is --wait there)",
     .man = R"roff(Timeout of each request to the server, with its repeats and its clean-up
(plus at most 200ms for the clean-up's connection; see
.BR "When Redis fails or misbehaves" ).
Default: config file key
.BR timeout ,
then
.BR 5s .)roff",
     .config = "timeout"},
    {.commands = "",
     .names = "--sync-replicas",
     .value = "N",
     .help =
         "acquisitions and renewals wait for N replicas to acknowledge (WAIT); 0 = off (default)",
     .man = R"roff(Every write that takes or renews something (an acquisition by
.BR lock ,
.BR exec ,
.BR "sem acquire" ,
.B "sem exec"
and
.BR "sem renew" ,
a waiter's claim of a grant, a re-entry, a
.B delay\-pop
claim, a
.B latch set
or
.BR "latch count\-down" ,
and every renewal of such a hold) counts only once
.I N
replicas have acknowledged it: the script is followed, in the same write on the
same connection, by
.BI "WAIT " "N timeout" .
A master with fewer than
.I N
replicas online (ROLE, asked once per connection) fails at once and nothing is
written; a wait that has queued goes on: its later attempts are sent, and only
one that takes something is judged.
When fewer than
.I N
acknowledge within
.BR \-\-sync\-timeout ,
what was taken is given back (the hold, or the re-entry's level, by its request
id; the permits; a claimed queue item, without counting a delivery) and rlock
exits 69 with one line naming the object and the numbers, such as
.EX
rlock: lock \(aqdeploy\(aq: 0 of 1 connected replicas of redis at 127.0.0.1:6380 acknowledged within 500ms (\-\-sync\-replicas 1); the hold (or re\-entry) it took was given back
.EE
A latch's change cannot be taken back without racing the others' count-downs
(a latch at 0 has opened already): it stands, and the line says so (exit 69).
A renewal that is not acknowledged does not count: the hold keeps its old
deadline, and
.B exec
stops its command as for a lost lock (exit 76) unless a later renewal is
acknowledged in time; once the command is gone, it releases the hold, which
the master still has.
Releases, reads
.RB ( inspect ", " status ", " "latch await" ),
.B limit
and
.B delay\-push
send no WAIT.
A waiting attempt that joins the queue is a write too and waits for the
replicas (at most
.B \-\-sync\-timeout
each); only the attempt that takes something is judged by their answer.
The results of
.BR lock ,
.BR "sem acquire" ,
.B latch set
and
.B latch count\-down
then include
.BR \(dqreplicas_acked\(dq .
See
.BR TOPOLOGIES
for what it buys.
.B 0
(the default) is off: nothing is sent.
At most 1000.
Default: environment
.BR RLOCK_SYNC_REPLICAS ,
config file key
.BR sync_replicas ,
then
.BR 0 .)roff",
     .env = "RLOCK_SYNC_REPLICAS",
     .config = "sync_replicas"},
    {.commands = "",
     .names = "--sync-timeout",
     .value = "DUR",
     .help = "how long --sync-replicas waits for the replicas",
     .man = R"roff(How long each WAIT of
.B \-\-sync\-replicas
may take (more than 0); the request's
.B \-\-timeout
budget grows by as much.
Default: environment
.BR RLOCK_SYNC_TIMEOUT ,
config file key
.BR sync_timeout ,
then
.BR 1s .)roff",
     .default_value = "1s",
     .env = "RLOCK_SYNC_TIMEOUT",
     .config = "sync_timeout"},
    {.commands = "",
     .names = "--layout",
     .value = "LAYOUT",
     .help = "whose key layout rlock's objects use: rlock (default) or redisson (Redisson's "
             "locks and semaphores: see --redisson-object; RCountDownLatch, RRateLimiter)",
     .man = R"roff(Whose key layout locks, semaphores, latches and limiters use:
.B rlock
(the default) or
.BR redisson ,
Redisson's RLock byte for byte: the lock hash under the bare name, fields
.I UUID:thread
(an owner of that shape is used as is, any other maps to a UUID derived from it and
thread 1), the reentry count, a PEXPIRE lease, and
.B 0
published on
.BI redisson_lock__channel:{ NAME }
(PUBLISH and SPUBLISH) when the lock is freed, and listened to both ways (SUBSCRIBE,
and SSUBSCRIBE for Redisson's sharded mode on a Redis 7 cluster), so that
.B rlock exec
and a Java service's RLock of the same name exclude each other and wake each other's
waiters. rlock's fence, queue, grants and reply records live under the prefix as
.IB PREFIX redisson:{ NAME }: ...
(the bare name's slot), where Redisson never looks.
.B \-\-redisson\-object
picks Redisson's fair lock or read-write lock instead (then
.B \-\-shared
is its read lock), and for
.B sem
Redisson's RPermitExpirableSemaphore (the default) or RSemaphore.
.B latch
is Redisson's RCountDownLatch: the count under the bare name, deleted at zero (a missing
latch counts as reached, as Java's
.B await
takes it),
.B 0
(zero) and
.B 1
(a new count) published on
.BI redisson_countdownlatch__channel__{ NAME }
both ways;
.B "count\-down \-\-id"
and
.B "set \-\-expire"
are refused there (no id can be tied to a Java round, and Java waiters wake only on a
.BR 0 ).
.B delay\-push
and
.B delay\-pop
are refused: RDelayedQueue's elements are encoded by the Java client's codec and moved by
its transfer task.
.B limit
is Redisson's RRateLimiter (its config hash under the bare name and the sliding log of
permits in
.BI { NAME }:permits
with
.BI { NAME }:value ,
OVERALL, or PER_CLIENT with
.BR \-\-client ),
permits stamped with the server's clock where Java stamps its own. Only
.BR lock ,
.BR unlock ,
.BR exec ,
.BR sem ,
.BR latch ,
.B limit
and
.B inspect
are covered; other subcommands and names with braces are refused (exit 64).
Redisson's RLock waiters are not in rlock's queue:
an rlock release that hands the lock to an rlock waiter does not wake them (they retry
when the lease they were told runs out), and one that subscribes only after a failed
attempt (node-redisson) sleeps the same way when a release comes in between: a shorter
.B \-\-lease
bounds that wait. Default: environment
.BR RLOCK_LAYOUT ,
config file key
.BR layout ,
then
.BR rlock .)roff",
     .completion = Completion::kChoices,
     .choices = "rlock redisson",
     .env = "RLOCK_LAYOUT",
     .config = "layout"},
    {.commands = "",
     .names = "--redisson-object",
     .value = "TYPE",
     .help = "under --layout redisson, which Redisson object a name is: lock (RLock), fair-lock, "
             "read-write-lock, semaphore or permit-expirable-semaphore",
     .man = R"roff(Under
.BR "\-\-layout redisson" ,
which of Redisson's objects the name is, as the Java side chose it with
.BR getLock ,
.BR getFairLock ,
.BR getReadWriteLock ,
.B getSemaphore
or
.BR getPermitExpirableSemaphore :
.BR lock ,
.BR fair\-lock ,
.BR read\-write\-lock ,
.B semaphore
or
.BR permit\-expirable\-semaphore .
The two sides must agree: Redisson keeps each object in its own shape under the same
bare name.
.B read\-write\-lock
takes Redisson's read lock with
.B \-\-shared
and its write lock otherwise; it has no queue nor notes, so
.BR \-\-note ,
.BR \-\-priority ,
.BR \-\-supersede ,
.BR \-\-one\-of ,
.B \-\-min\-hold
and
.B \-\-once\-per
exit 64 with it. Default:
.B read\-write\-lock
for
.BR \-\-shared ,
.B lock
for the other lock commands,
.B permit\-expirable\-semaphore
for
.BR sem .
.B permit\-expirable\-semaphore
is Redisson's RPermitExpirableSemaphore (the free count under the bare name, each permit's
id and expiry in
.BI { NAME }:timeout ,
changes announced on
.BI redisson_sc:{ NAME }
both ways);
.B semaphore
is RSemaphore (the free count alone: permits without id or expiry), for
.BR "sem acquire" ,
.BR release ,
.B status
and
.B exec
(permits taken and given back by
.BR \-\-count ).
A lock type given to
.B sem
or a semaphore type given to a lock command exits 64, as does the flag without
.BR "\-\-layout redisson" .
Default: environment
.BR RLOCK_REDISSON_OBJECT ,
config file key
.BR redisson_object .)roff",
     .completion = Completion::kChoices,
     .choices = "lock fair-lock read-write-lock semaphore permit-expirable-semaphore",
     .env = "RLOCK_REDISSON_OBJECT",
     .config = "redisson_object"},
    {.commands = "",
     .names = "--tls-ca-cert",
     .value = "FILE",
     .help = "rediss: trust the CAs in FILE (PEM) instead of the system's",
     .man = R"roff(For
.BR rediss:// ,
.BR rediss\-sentinel:// ,
.B rediss\-cluster://
and
.B rediss\-quorum://
URLs: trust the CA certificates in
.I FILE
(PEM) instead of the system's trust store
.RB ( /etc/ssl/certs ).
Also
.B RLOCK_TLS_CA_CERT
and the config file key
.BR tls_ca_cert .)roff",
     .completion = Completion::kFile,
     .env = "RLOCK_TLS_CA_CERT",
     .config = "tls_ca_cert"},
    {.commands = "",
     .names = "--tls-ca-dir",
     .value = "DIR",
     .help = "rediss: trust the CAs in DIR (hashed, c_rehash) instead of the system's",
     .man = R"roff(Trust the CA certificates in
.I DIR
(hashed names, as
.B openssl rehash
makes them) instead of the system's; with
.BR \-\-tls\-ca\-cert ,
both.
Also
.B RLOCK_TLS_CA_DIR
and
.BR tls_ca_dir .)roff",
     .completion = Completion::kDirectory,
     .env = "RLOCK_TLS_CA_DIR",
     .config = "tls_ca_dir"},
    {.commands = "",
     .names = "--tls-cert",
     .value = "FILE",
     .help = "rediss: client certificate (PEM), with --tls-key",
     .man = R"roff(The client certificate (PEM, with its chain) and its private key (PEM, not
encrypted), for a server that demands one
.RB ( tls\-auth\-clients ).
They go together. The key file must not be accessible by group or others, as a
password file (exit status 64); a key that does not match the certificate
exits 69.
Also
.BR RLOCK_TLS_CERT ,
.B RLOCK_TLS_KEY
and
.BR tls_cert ,
.BR tls_key .)roff",
     .completion = Completion::kFile,
     .env = "RLOCK_TLS_CERT",
     .config = "tls_cert"},
    {.commands = "",
     .names = "--tls-key",
     .value = "FILE",
     .help = "rediss: client private key (PEM, mode 600)",
     .completion = Completion::kFile,
     .env = "RLOCK_TLS_KEY",
     .config = "tls_key"},
    {.commands = "",
     .names = "--tls-insecure",
     .value = "",
     .help = "rediss: verify neither the certificate nor the host name (says so on stderr)",
     .man = R"roff(Verify neither the server's certificate nor its name: the connection is
encrypted, but anyone on the path can pose as the server. rlock says so in one
line on standard error, even with
.BR \-q .
Also
.B RLOCK_TLS_INSECURE
and
.B tls_insecure
.RB ( 1 ", " true ", " yes ;
.BR 0 ", " false ", " no ).)roff",
     .env = "RLOCK_TLS_INSECURE",
     .config = "tls_insecure"},
    {.commands = "",
     .names = "--format",
     .value = "FMT",
     .help = "output of listings: json or table; prometheus (inspect only)",
     .man = R"roff(Output format of listings
.RB ( inspect ;
.B doctor
has a table too).
.B prometheus
is for
.B inspect
only: with any other subcommand it is a usage error (64), since a scraper fed JSON
fails unseen.
Default:
.BR json .)roff",
     .completion = Completion::kChoices,
     .choices = "json table prometheus"},
    {.commands = "",
     .names = "-v,--verbose",
     .value = "",
     .help = "explain on stderr what rlock waits for and why",
     .man = R"roff(Explain on standard error what
.B rlock
waits for and why.)roff"},
    {.commands = "",
     .names = "-q,--quiet",
     .value = "",
     .help = "no result on stdout, no notices on stderr (warnings stay)",
     .man = R"roff(Print no result JSON on standard output and no notices on standard error.
Errors and warnings (the made-up owner of
.BR lock )
still print one line on standard error.
The exit status carries the result.)roff"},
    {.commands = "help",
     .names = "subcommand",
     .value = "SUBCOMMAND",
     .help = "lock, unlock, exec, sem, inspect, latch, limit, delay-push, delay-pop or doctor, "
             "then sem's or latch's own",
     .completion = Completion::kSubcommand},
};

}  // namespace

std::span<const Flag> global_flags() { return kGlobalFlags; }

}  // namespace rlock::cli
