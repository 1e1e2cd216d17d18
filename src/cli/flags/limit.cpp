#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kLimitFlags[] = {
    {.commands = "limit",
     .names = "name",
     .value = "NAME",
     .help = "limiter name; then optionally -- CMD [ARGS...] to run"},
    {.commands = "limit",
     .names = "--rate",
     .value = "N",
     .help = "calls of cost 1 allowed per --per (stored with the limiter)",
     .man = R"roff(Calls of cost 1 per period: a call is let through every
.IR DUR / N
(emission interval) once the burst is used.
Both are required (whole
.I N
from 1; a
.I DUR
of at least 1ms).)roff"},
    {.commands = "limit",
     .names = "--per",
     .value = "DUR",
     .help = "the period of --rate, e.g. 1s, 1m, 1h",
     .completion = Completion::kSuggestions,
     .choices = "1s 1m 1h 1d"},
    {.commands = "limit",
     .names = "--burst",
     .value = "B",
     .help = "calls of cost 1 that pass at once from idle",
     .man = R"roff(How many calls of cost 1 pass at once from idle (default 1).)roff",
     .default_value = "1"},
    {.commands = "limit",
     .names = "--cost",
     .value = "K",
     .help = "what this call takes, 1..burst",
     .man = R"roff(What this call takes (default 1, at most
.IR B :
a larger cost could never pass and is a usage error).)roff",
     .default_value = "1"},
    {.commands = "limit",
     .names = "--client",
     .value = "ID",
     .help = "a bucket per client: this call's client id",
     .man = R"roff(A bucket per client, at
.I N
per
.I DUR
each (Redisson's PER_CLIENT).)roff"},
    {.commands = "limit",
     .names = "--client-rate",
     .value = "M",
     .help = "with --client: each client's rate per --per, beside the overall --rate",
     .man = R"roff(With
.BR \-\-client :
each client at
.I M
per
.I DUR
and all clients together at
.I N
per
.IR DUR ;
one decision checks both buckets, and consumes from both or from neither.
The client's bucket has the same burst
.IR B .)roff"},
    {.commands = "limit",
     .names = "-w,--wait",
     .value = "DUR",
     .help =
         "when limited, sleep until the call can pass and retry, up to DUR (default: don't wait)",
     .man = R"roff(When limited, sleep exactly until the reported retry time and try again (no
polling), until allowed or
.I DUR
is used up (then exit 75).
A retry time beyond what is left of
.I DUR
gives up at once
.RB ( \-v
says so), and so does a process stopped (SIGSTOP) past the end of
.I DUR
when it continues: no call passes after
.I DUR
ran out.
INT, TERM, HUP or QUIT end the wait with exit status 128+signal.)roff",
     .completion = Completion::kSuggestions,
     .choices = "inf 10s 1m 5m 1h"},
    {.commands = "limit",
     .names = "--peek",
     .value = "",
     .help = "decide without consuming anything",
     .man = R"roff(Decide without consuming: nothing is written.)roff"},
    {.commands = "limit",
     .names = "--reconfigure",
     .value = "",
     .help = "store a different --rate/--per/--burst/--client-rate, converting the state",
     .man = R"roff(Store a different
.BR \-\-rate ,
.BR \-\-per ,
.BR \-\-burst ,
.B \-\-client
or
.BR \-\-client\-rate .
Without it such a call is refused with exit status 65 and one line naming the
stored and the given config.
Every bucket, the overall one and each client's, keeps the fraction of its
burst that was used (no burst of free calls, no lock-out); the clients' buckets
are converted in one pass over those with state.
A bucket the new config adds (the overall one with a first
.BR \-\-client\-rate ,
or every client's with a first
.BR \-\-client )
starts full; one it drops is deleted.)roff"},
    {.commands = "limit",
     .names = "--fail-open",
     .value = "",
     .help = "when Redis is unreachable, let the call through (default: exit 69)",
     .man =
         R"roff(When Redis cannot decide (unreachable, timed out, or a server that cannot serve now: a
read\-only replica, LOADING, OOM; every case that would exit 69), let the call through: exit 0 (or run the command)
and print the JSON with
.B \(dqallowed\(dq:true
and
.B \(dqfailed_open\(dq:true
(the other fields that need the server are null), and one line on standard
error.
Without it the limiter decides nothing and rlock exits 69.
A decision whose reply is lost is repeated within
.B \-\-timeout
and gets the first decision back (it counts once).
One whose reply does not come within
.B \-\-timeout
at all (a stalled server) may still be applied when the server resumes: such a
call exits 69 (or, with
.BR \-\-fail\-open ,
passes once) and may count against the limit all the same.
A server restarted without persistence has forgotten every limiter: they start
full again.)roff"},
    {.commands = "limit",
     .names = "--reset",
     .value = "",
     .help = "clear the limiter's state and config",
     .man = R"roff(Clear the limiter's state and config (as
.B "unlock \-\-force"
does for a lock) and print
.BR {"name":"api","reset":true,"client_buckets":3} ;
.B reset
is false when there was nothing to clear.
It takes no other limiter option.)roff"},
    {.commands = "limit",
     .names = "-E,--conflict-exit-code",
     .value = "N",
     .help = "exit code when the call is limited",
     .man = R"roff(Exit status when limited (default 75).)roff",
     .default_value = "75"},
};

}  // namespace

std::span<const Flag> limit_flags() { return kLimitFlags; }

}  // namespace rlock::cli
