#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kExecFlags[] = {
    {.commands = "exec",
     .names = "name",
     .value = "NAME",
     .help = "lock name; several: all of them or none; then -- CMD [ARGS...], the command to run"},
    {.commands = "exec,elect",
     .names = "--lease",
     .value = "DUR",
     .help = "lease of the hold",
     .man = R"roff(Lease of the lock; renewed every
.IR DUR /3
while the command runs (or sooner: every half of the time from a renewal to the
stop point, if that is less).
Default:
.BR 30s .
A short lease frees the lock sooner after a crash; a long one rides out longer
Redis outages.)roff",
     .default_value = "30s"},
    {.commands = "exec,elect,sem exec,delay-pop",
     .names = "--on-lost",
     .value = "SIG",
     .help = "signal for the job if the hold is lost",
     .man = R"roff(Signal sent to the command (its process group, or every process in its cgroup)
when the lock is lost or its lease reaches the stop point.
A name with or without
.B SIG
.RB ( TERM ,
.BR SIGTERM ,
.BR INT ,
.BR HUP ,
.BR QUIT ,
.BR KILL ,
.BR USR1 ,
.BR USR2 )
or a number.
Default:
.BR TERM .)roff",
     .completion = Completion::kSuggestions,
     .choices = "TERM INT HUP QUIT KILL USR1 USR2",
     .default_value = "TERM"},
    {.commands = "exec,elect,sem exec,delay-pop",
     .names = "--kill-after",
     .value = "DUR",
     .help = "then SIGKILL after DUR (default 10s, shortened to fit --lease)",
     .man = R"roff(After sending the
.B \-\-on\-lost
signal, send KILL if the command is still running after
.IR DUR
(and never later than the lease deadline minus the margin).
It must leave the renewals room: at most two thirds of the lease minus twice
the margin (18.0s for the default 30s lease, 1.1s for a 2s lease); a larger
value is a usage error (exit status 64).
Default:
.BR 10s ,
shortened to that limit for a short lease
.RB ( \-v
says so).)roff"},
    {.commands = "exec,sem exec,delay-pop",
     .names = "--min-hold",
     .value = "DUR",
     .help = "keep the hold until DUR after acquisition",
     .man = R"roff(Keep the lock held until
.I DUR
after it was acquired, even if the command finished earlier.
.B rlock
still exits as soon as the command ends; the lock then expires by itself.
Use it for a job that runs from the same crontab on several hosts: a host whose
clock or start is a little late then finds the lock still held instead of
running the job a second time.
If the command runs longer than
.IR DUR ,
this option changes nothing.
The kept lock (count 0) is busy for every owner, its own included;
.B unlock \-\-owner
with its owner, or
.BR "unlock \-\-force" ,
ends it early.)roff"},
    {.commands = "exec,elect,sem exec,delay-pop",
     .names = "--keep-secrets",
     .value = "",
     .help = "let the job inherit RLOCK_PASSWORD and a password-bearing RLOCK_URL/REDIS_URL",
     .man = R"roff(Let the command inherit
.B RLOCK_PASSWORD
and a password-bearing
.B RLOCK_URL
or
.BR REDIS_URL .)roff"},
    {.commands = "exec",
     .names = "--once-per",
     .value = "DUR",
     .help = "run at most once per DUR slot of the server's clock, across all hosts",
     .man = R"roff(Run the command at most once per slot of
.I DUR
across all hosts: slots are aligned on the Redis server's clock (multiples of
.I DUR
since the Unix epoch, shifted by
.BR \-\-slot\-offset ),
whatever the hosts' clocks say and however long the command runs.
The first exec in a slot claims it (one more round trip than a plain exec) and
then takes the lock as exec does; any later exec in that slot exits with the
busy status (75, or
.BR \-E )
at once, naming the slot and the host that claimed it.
When the lock is still held (the previous slot's job still runs), the slot's
run is skipped: recorded as
.B skipped
and exit 75.
An error before the command starts (an ACL refusal, a key of another type) or a
signal gives the slot back, so that another exec in it may run (unless Redis
cannot be told: the slot then stays taken).
Each run is recorded (host, owner, slot, start, end, exit status,
.B lost
or
.BR skipped ;
the last 100 are kept, without expiry):
.B rlock inspect
shows them.
.I DUR
must divide a day evenly
.RB ( 1m ,
.BR 5m ,
.BR 1h ,
.BR 6h )
or be a whole number of days; anything else, 0, several NAMEs,
.BR \-\-wait ,
.BR \-\-shared ,
.B \-\-layout redisson
and a quorum URL are usage errors (exit 64).)roff",
     .completion = Completion::kSuggestions,
     .choices = "1m 5m 15m 1h 1d"},
    {.commands = "exec",
     .names = "--slot-offset",
     .value = "DUR",
     .help = "--once-per: slots start DUR after each multiple of the slot length (default 0)",
     .man = R"roff(With
.BR \-\-once\-per :
slots start
.I DUR
after each multiple of the slot length since the epoch, in UTC
.RB ( "\-\-once\-per 1d \-\-slot\-offset 2h" :
each day from 02:00 UTC).
At least 0 and less than the slot length; anything else, or without
.BR \-\-once\-per ,
is a usage error (exit 64).)roff"},
    {.commands = "exec,elect",
     .names = "-c,--command",
     .value = "CMD",
     .help = "run CMD with $SHELL -c (default /bin/sh) instead of -- CMD ARGS (flock -c)"},
};

}  // namespace

std::span<const Flag> exec_flags() { return kExecFlags; }

}  // namespace rlock::cli
