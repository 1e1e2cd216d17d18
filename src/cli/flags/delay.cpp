#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kDelayFlags[] = {
    {.commands = "delay-push", .names = "queue", .value = "QUEUE", .help = "queue name"},
    {.commands = "delay-push",
     .names = "payload",
     .value = "PAYLOAD",
     .help = "the item's bytes; - reads them from stdin"},
    {.commands = "delay-push",
     .names = "--delay",
     .value = "DUR",
     .help = "due DUR after the server's clock now (0: now)"},
    {.commands = "delay-push",
     .names = "--at",
     .value = "TIME",
     .help = "due at TIME: RFC 3339 or Unix seconds"},
    {.commands = "delay-push",
     .names = "--id",
     .value = "ID",
     .help = "item id: the same id again changes nothing (default: random)",
     .man = R"roff(The item's id (default: 128 random bits in hex).
While an item with this id is in the queue (scheduled, in flight or a dead
letter), pushing it again changes nothing and prints
.B \(dqduplicate\(dq:true
with the stored due time; once the item was consumed the id may be used again.)roff"},
    {.commands = "delay-push",
     .names = "--lines",
     .value = "",
     .help = "one item per stdin line, pipelined in batches",
     .man = R"roff(One item per line of standard input (the newline removed), pushed 512 per
round trip (pipelined); one JSON line per item.
With
.B \-\-id
.IR ID ,
the items are
.IR ID .1,
.IR ID .2, ...
by line number, so a bulk push re-run after a failure adds only what is missing.)roff"},
    {.commands = "delay-push",
     .names = "--max-payload",
     .value = "SIZE",
     .help = "largest payload accepted",
     .man = R"roff(The largest payload accepted (default 1MiB; a number of bytes or KiB, MiB).
A larger payload exits 65 and pushes nothing; with
.BR \-\-lines ,
the batches before the oversized line were pushed, nothing after it.)roff",
     .default_value = "1MiB"},
    {.commands = "delay-pop",
     .names = "queue",
     .value = "QUEUE",
     .help = "queue name; then optionally -- CMD [ARGS...]"},
    {.commands = "delay-pop",
     .names = "-w,--wait",
     .value = "DUR",
     .help = "wait up to DUR for a due item, inf: forever (default: don't)",
     .completion = Completion::kSuggestions,
     .choices = "inf 10s 1m 5m 1h"},
    {.commands = "delay-pop",
     .names = "--count",
     .value = "N",
     .help = "take up to N due items at once (1 to 1000, default 1; without CMD)",
     .man = R"roff(Without a command: take up to
.I N
(1 to 1000, default 1) due items at once.)roff"},
    {.commands = "delay-pop",
     .names = "--visibility",
     .value = "DUR",
     .help = "-- CMD: lease of the item while CMD runs, renewed",
     .default_value = "30s"},
    {.commands = "delay-pop",
     .names = "--max-deliveries",
     .value = "N",
     .help = "-- CMD: after N deliveries (1 to 1000000000) an item goes to the dead letters "
             "(default: never)",
     .man = R"roff(An item whose
.IR N th
delivery fails (or whose lease runs out) goes to the dead-letter list instead
of being due again (default: no limit); it is checked again when the item is
next taken, with the taking consumer's
.BR \-\-max\-deliveries .)roff"},
    {.commands = "delay-pop",
     .names = "--forever",
     .value = "",
     .help = "keep serving the queue until INT/TERM (exit 0)",
     .man = R"roff(Keep serving the queue: without a command, stream the items as they come due;
with one, run it for one item at a time.
Memory stays bounded.
INT, TERM, HUP or QUIT end it with exit status 0, whenever they come: while
waiting, between two items, or while the item is acknowledged or given back.
With a command, one that comes while the command runs is forwarded to it, and
the service ends once that item is settled (acknowledged when the command still
exits 0, given back otherwise), also with exit status 0: nothing is left in
flight.
Redis unavailable: one line on standard error, retried every second.
A failed write to standard output ends it with exit status 74 (see below).)roff"},
    {.commands = "delay-pop",
     .names = "--dead",
     .value = "",
     .help = "read (and remove) up to --count dead letters instead",
     .man = R"roff(Print (one JSON line each, with
.BR id ,
.BR payload ,
.BR due_ms ,
.BR deliveries ,
.B read_ms
and
.BR reason ,
such as
.B \(dqdelivered 5 times (\-\-max\-deliveries 5)\(dq
or
.BR "\(dqmalformed metadata: \(aqgarbage\(aq\(dq" ;
a missing payload is
.BR null )
and remove up to
.B \-\-count
dead letters, oldest first; none: exit 75.)roff"},
    {.commands = "delay-pop",
     .names = "-E,--conflict-exit-code",
     .value = "N",
     .help = "exit code when no item was due in time",
     .default_value = "75"},
};

}  // namespace

std::span<const Flag> delay_flags() { return kDelayFlags; }

}  // namespace rlock::cli
