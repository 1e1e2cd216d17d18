#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kInspectFlags[] = {
    {.commands = "inspect",
     .names = "pattern",
     .value = "PATTERN",
     .help = "glob over object names",
     .completion = Completion::kLockName,
     .default_value = "*"},
    {.commands = "inspect",
     .names = "--type",
     .value = "TYPE[,TYPE]",
     .help = "only these types, comma-separated: lock,sem,latch,limiter,queue,runs (default: all)",
     .man = R"roff(Only these types:
.BR lock ,
.BR sem ,
.BR latch ,
.BR limiter ,
.BR queue ,
.B runs
(default: all).
An unknown type is a usage error (exit 64).)roff",
     .completion = Completion::kCommaList,
     .choices = "lock sem latch limiter queue runs"},
    {.commands = "inspect",
     .names = "--history",
     .value = "N",
     .help = "show the last N runs of each exec --once-per name (1-100, default 10)",
     .man = R"roff(Show the last
.I N
runs of each name that
.B exec \-\-once\-per
ran (objects of type
.BR runs ,
kept after the lock is gone), newest first.
From 1 to 100; default 10.
Anything else is a usage error (exit 64).)roff",
     .default_value = "10"},
    {.commands = "inspect",
     .names = "--watch",
     .value = "",
     .help = "list again on every change until q or ^C: a live table on a terminal, JSON lines "
             "otherwise",
     .man = R"roff(List again whenever something changes, until
.BR q ,
^C, or SIGINT, SIGTERM, SIGHUP or SIGQUIT (exit 0); see
.B Watching
below.)roff"},
    {.commands = "inspect",
     .names = "--interval",
     .value = "DUR",
     .help = "--watch: list again at least every DUR (at least 100ms, default 1s)",
     .man = R"roff(With
.BR \-\-watch :
list again at least every
.I DUR
(default 1s; at least 100ms: less, 0, a negative or malformed value is a usage
error, exit 64, and so is
.B \-\-interval
without
.BR \-\-watch ).)roff",
     .completion = Completion::kSuggestions,
     .choices = "500ms 1s 5s 30s"},
};

}  // namespace

std::span<const Flag> inspect_flags() { return kInspectFlags; }

}  // namespace rlock::cli
