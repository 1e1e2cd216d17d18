#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kLockFlags[] = {
    {.commands = "lock",
     .names = "name",
     .value = "NAME",
     .help = "lock name; several: all of them or none (sorted); --one-of: any one"},
    {.commands = "lock,exec,elect,sem acquire,sem exec",
     .names = "--owner",
     .value = "ID",
     .help = "owner id (default: RLOCK_OWNER or host:pid:random)",
     .man = R"roff(Owner to hold the lock as.
Default:
.BR RLOCK_OWNER ,
then the config file key
.BR owner ,
then
.IB host : pid : random\fR,\fP
which differs on every run, so a script that wants to
.B unlock
later must pass an owner or keep the one printed.
A made-up owner is also told in a warning on standard error, printed even with
.BR \-q ,
with the
.B rlock unlock
command that releases the lock.
Processes that use the same owner share the holds they take with
.BR lock :
the second one re-enters instead of waiting.
Concurrent
.B exec
processes never share a hold (see
.BR WAITING ).)roff",
     .env = "RLOCK_OWNER",
     .config = "owner"},
    {.commands = "lock",
     .names = "--lease",
     .value = "DUR",
     .help = "lease of the hold",
     .man = R"roff(How long the lock is held without renewal.
Default:
.BR 30s .)roff",
     .default_value = "30s"},
    {.commands = "lock,exec",
     .names = "-w,--wait",
     .value = "DUR",
     .help = "wait up to DUR for the lock, inf: forever (default: don't wait)",
     .man = R"roff(If the lock is held, wait up to
.I DUR
for it;
.B inf
(or
.BR infinity )
waits for as long as it takes, as
.BR flock (1)
does by default.
An empty
.I DUR
is a usage error.)roff",
     .completion = Completion::kSuggestions,
     .choices = "inf 10s 1m 5m 1h"},
    {.commands = "lock,exec",
     .names = "-n,--no-wait,--nb,--nonblock",
     .value = "",
     .help = "fail at once if the lock is held (the default; flock -n, --nb)",
     .man = R"roff(Do not wait; fail at once if the lock is held.
This is the default.
.RB ( \-\-nb
and
.B \-\-nonblock
are
.BR flock (1)'s
spellings.))roff"},
    {.commands = "lock,exec",
     .names = "-s,--shared",
     .value = "",
     .help = "a shared (read) hold: any number at once, but no exclusive holder (flock -s)",
     .man = R"roff(Take a shared (read) hold, as
.BR "flock \-s" :
any number of shared holds at once, or one exclusive holder (the plain lock),
never both.
Each shared hold has its own lease, so a reader that died stops blocking
writers when its own lease ends, while other readers renew theirs.
Once an exclusive request waits, shared requests that come later queue behind
it (writers do not starve); when an exclusive holder releases and the head of
the queue is a run of shared requests, they all get the lock in one handoff.
A holder of the exclusive lock may also take it shared (a downgrade: a plain
.B unlock
then drops the exclusive hold and keeps the shared one); a shared holder
asking for the exclusive lock would wait for itself, so that is refused at
once whatever
.B \-\-wait
says (exit status 65, the shared hold unchanged).
The fencing token advances on fresh exclusive acquisitions only; a shared hold
gets the current token.
The JSON result then has
.BR \(dqshared\(dq:true .
With
.BR exec ,
.B \-\-shared
and
.B \-\-min\-hold
together are a usage error.)roff"},
    {.commands = "lock,exec",
     .names = "-x,--exclusive",
     .value = "",
     .help = "an exclusive hold, the default (flock -x)",
     .man = R"roff(Take an exclusive hold, as
.BR "flock \-x" .
This is the default; with
.B \-s
it is a usage error.)roff"},
    {.commands = "lock,exec,elect,sem acquire,sem exec",
     .names = "--note",
     .value = "TEXT",
     .help = "say why it is held (shown by inspect; unlock --force prints it)",
     .man = R"roff(What the hold says of itself ("frozen for the release, ask #ops"):
kept on the server with the hold, and with the queue entry while it waits,
and gone with them; shown by
.B inspect
beside the holder's
.B acquired_at
and each waiter's
.BR waiting_since ,
and printed by
.B unlock \-\-force
with the hold it removed (for
.BR sem ,
each permit keeps the note and the time it was taken).
At most 200 bytes of UTF-8 without control characters; an empty, longer or
invalid note is a usage error.
A re-entry by the same owner keeps the first hold's note and time.
Exclusive holds only: with
.B \-\-shared
it is a usage error.
A long
.B lock \-\-lease 8h \-\-note
is a reservation.)roff"},
    {.commands = "lock,exec",
     .names = "--one-of",
     .value = "",
     .help = "the NAMEs are a pool: take whichever is free first (RLOCK_NAME says which)",
     .man = R"roff(The
.IR NAME s
are a pool: take whichever one is free first, instead of all of them
(Jenkins' lockable resources with a label).
Waiters of a pool queue in every member's queue, so a release of any member goes
to the longest-waiting of them, and a later direct request for one member
queues behind them; a member held directly is busy for the pool.
On one server waiters are served in arrival order across the members; in a
cluster each member's queue is on its own node: arrival order holds per member,
across members only as closely as the waiters' requests to the nodes.
.B exec
gives the job
.B RLOCK_NAME
(the member taken) and
.B RLOCK_NAMES
(the members taken, comma-separated) and that member's
.BR RLOCK_FENCE ;
.B lock
prints the member taken as
.BR \(dqname\(dq .
Release it as any lock:
.BR "rlock unlock NAME" .
A member held by the rlock exec this command runs under is skipped (only that
exec's end could free it); when every member is, the request would wait for
itself and is refused at once (exit status 65).)roff"},
    {.commands = "lock,exec",
     .names = "--count",
     .value = "K",
     .help = "with --one-of: take K members of the pool (1 to the number of NAMEs)",
     .man = R"roff(With
.BR \-\-one\-of ,
take
.I K
members of the pool (1 to the number of
.IR NAME s;
other values are a usage error).
They are taken one at a time in sorted (bytewise) order, each the first free of
those after the last one taken (that leave enough members after it), the ones
taken kept and renewed while the next is waited for, so that pool waiters never
wait for each other in a circle.
.B RLOCK_NAME
and
.B RLOCK_FENCE
are the first taken's,
.B RLOCK_NAMES
has them all, comma-separated, and
.B RLOCK_FENCES
a line
.IB NAME = FENCE
for each;
.B lock
prints
.B {\(dqacquired\(dq:true,\(dqlocks\(dq:[...]}
as for several names.)roff",
     .default_value = "1"},
    {.commands = "lock,exec",
     .names = "-E,--conflict-exit-code",
     .value = "N",
     .help = "exit code when the lock is not acquired",
     .man = R"roff(Exit with
.I N
(decimal, 0 to 255:
.B 010
is ten) instead of 75 when the lock was not acquired.)roff",
     .default_value = "75"},
    {.commands = "lock,exec",
     .names = "--supersede",
     .value = "",
     .help = "a newer --supersede wait makes this queued one give up (exit 79)",
     .man = R"roff(Newest wins, as GitLab's
.B resource_group
.B newest_first
and GitHub Actions'
.BR concurrency :
when a newer
.B \-\-supersede
request of the same lock queues, this one, if it is still queued, leaves the
queue at once (told on its own channel, never by polling) and exits with status
79, naming the newer request's owner on standard error.
The server keeps a record of it until its wait would have ended (at most a day),
so a waiter that was stopped and resumed meanwhile takes nothing, even a free
lock.
Plain waiters are not affected and keep their places: a
.B \-\-supersede
waiter has its arrival place among them, and a newer one takes the place of
its own arrival, behind the plain waiters that came before it.
A request already granted or holding the lock is not superseded (see
.BR \-\-cancel\-running ).
Without
.B \-\-wait
nothing queues, but an
.B exec
so taken can be cancelled by a newer
.BR \-\-cancel\-running .
One NAME only.)roff"},
    {.commands = "lock,exec",
     .names = "--cancel-running",
     .value = "",
     .help = "with --supersede: also stop the running --supersede exec job",
     .man = R"roff(With
.BR \-\-supersede ,
as GitHub Actions'
.BR cancel\-in\-progress :
the running
.B exec
whose hold was taken with
.B \-\-supersede
is cancelled too.
It learns it at once (the cancelling script publishes on the lock's holder channel,
and the holder renews on hearing it; at its next renewal, every lease/3, should that
message be lost) and treats it as a lost lock:
its job gets the
.B \-\-on\-lost
signal, KILL after
.BR \-\-kill\-after ,
and once the job is dead it releases the lock, which goes to the next waiter;
that exec exits 79.
No waiter gets the lock before that job is dead: the hold stays until its holder
releases it or its lease ends.
Without
.B \-\-supersede
it is a usage error.)roff"},
    {.commands = "lock,exec",
     .names = "--priority",
     .value = "N",
     .help = "wait ahead of waiters of lower priority (0 to 99; plain waits 0)",
     .man = R"roff(Queue ahead of every waiter of a lower priority, as Jenkins Lockable
Resources' queue priority: higher first, arrival order within one priority.
.I N
is 0 (plain waiters) to 99; anything else is a usage error.
A waiter that already has the lock granted keeps it; priority orders only who is
next.
.B inspect
shows each waiter's priority.
One NAME only.)roff",
     .default_value = "0"},
    {.commands = "unlock",
     .names = "name",
     .value = "NAME",
     .help = "lock name; several: each is unlocked",
     .completion = Completion::kLockName},
    {.commands = "unlock",
     .names = "--owner",
     .value = "ID",
     .help = "the owner that holds it (or RLOCK_OWNER)",
     .man = R"roff(The owner that holds the lock.
Default:
.BR RLOCK_OWNER ,
then the config file key
.BR owner .
Without any owner and without
.BR \-\-force ,
.B unlock
is a usage error (exit status 64).)roff"},
    {.commands = "unlock",
     .names = "-s,--shared",
     .value = "",
     .help = "drop a shared (read) hold of the owner",
     .man = R"roff(Drop a shared hold of the owner (one level) instead of an exclusive one.)roff"},
    {.commands = "unlock",
     .names = "--force",
     .value = "",
     .help = "release it whoever holds it, writer and readers (for stuck locks)",
     .man = R"roff(Release the lock whoever holds it, whatever the count: the exclusive holder
and every shared holder.
An
.B exec
that held it hears of it at once and stops its job as for a lost lock (exit 76).)roff"},
};

}  // namespace

std::span<const Flag> lock_flags() { return kLockFlags; }

}  // namespace rlock::cli
