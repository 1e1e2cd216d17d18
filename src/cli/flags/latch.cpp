#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kLatchFlags[] = {
    {.commands = "latch set,latch count-down,latch await,latch status",
     .names = "name",
     .value = "NAME",
     .help = "latch name"},
    {.commands = "latch set", .names = "count", .value = "N", .help = "the count, N >= 1"},
    {.commands = "latch set",
     .names = "--expire",
     .value = "DUR",
     .help = "expiry of the whole latch (default: none)"},
    {.commands = "latch set",
     .names = "--force",
     .value = "",
     .help = "reset a live latch (count > 0) too"},
    {.commands = "latch count-down",
     .names = "--by",
     .value = "K",
     .help = "amount K >= 1",
     .default_value = "1"},
    {.commands = "latch count-down",
     .names = "--id",
     .value = "ID",
     .help = "participant id: counts down only once, however often retried"},
    {.commands = "latch await",
     .names = "-w,--wait",
     .value = "DUR",
     .help = "wait up to DUR, inf: forever (default: don't wait)",
     .completion = Completion::kSuggestions,
     .choices = "inf 10s 1m 5m 1h"},
    {.commands = "latch await",
     .names = "-n,--no-wait",
     .value = "",
     .help = "check once (the default)"},
    {.commands = "latch await",
     .names = "-E,--conflict-exit-code",
     .value = "N",
     .help = "exit code when the count is not 0 in time",
     .default_value = "75"},
    {.commands = "latch status",
     .names = "--limit",
     .value = "N",
     .help = "about how many ids to list (default 1000, at most 10000)"},
    {.commands = "latch status",
     .names = "--after",
     .value = "C",
     .help = "list the page of ids after the one whose \"next\" was C"},
};

}  // namespace

std::span<const Flag> latch_flags() { return kLatchFlags; }

}  // namespace rlock::cli
