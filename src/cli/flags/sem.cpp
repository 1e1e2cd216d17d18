#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kSemFlags[] = {
    {.commands = "sem acquire,sem release,sem renew,sem status",
     .names = "name",
     .value = "NAME",
     .help = "semaphore name"},
    {.commands = "sem acquire,sem exec",
     .names = "--lease",
     .value = "DUR",
     .help = "lease of each permit",
     .default_value = "30s"},
    {.commands = "sem acquire,sem exec",
     .names = "-w,--wait",
     .value = "DUR",
     .help = "wait up to DUR for the permits, inf: forever (default: don't wait)",
     .completion = Completion::kSuggestions,
     .choices = "inf 10s 1m 5m 1h"},
    {.commands = "sem acquire,sem exec",
     .names = "-n,--no-wait",
     .value = "",
     .help = "fail at once if too few permits are free (the default)"},
    {.commands = "sem acquire,sem exec",
     .names = "-E,--conflict-exit-code",
     .value = "N",
     .help = "exit code when the permits are not taken",
     .default_value = "75"},
    {.commands = "sem acquire,sem exec",
     .names = "--permits",
     .value = "N",
     .help = "the semaphore's capacity (stored at first use)",
     .man = R"roff(The capacity, 1 to 1000000.
Required, except for Redisson's RSemaphore
.RB ( \-\-redisson\-object
.BR semaphore ),
where it only sets a semaphore never set (without it, one never set has no permits).)roff"},
    {.commands = "sem acquire,sem exec",
     .names = "--count",
     .value = "K",
     .help = "permits to take at once",
     .man = R"roff(Permits to take at once, 1 to
.I N
(and at most 10000); all or none. Default 1.)roff",
     .default_value = "1"},
    {.commands = "sem acquire,sem exec",
     .names = "--resize",
     .value = "",
     .help = "store --permits as the new capacity",
     .man = R"roff(Store
.I N
as the new capacity.)roff"},
    {.commands = "sem release",
     .names = "--permit",
     .value = "ID",
     .help = "permit id(s) to release (repeatable)",
     .repeatable = true},
    {.commands = "sem release",
     .names = "--count",
     .value = "K",
     .help = "--redisson-object semaphore: anonymous permits to give back",
     .man = R"roff(Only for Redisson's RSemaphore
.RB ( \-\-layout
.B redisson
.B \-\-redisson\-object
.BR semaphore ):
give
.I K
(1 to 10000) anonymous permits back, as its release(K) does: anyone may.)roff",
     .default_value = "1"},
    {.commands = "sem release",
     .names = "--force",
     .value = "",
     .help = "free every permit, whoever holds it"},
    {.commands = "sem renew",
     .names = "--permit",
     .value = "ID",
     .help = "permit id(s) to renew (repeatable)",
     .repeatable = true},
    {.commands = "sem renew",
     .names = "--lease",
     .value = "DUR",
     .help = "new lease from now",
     .default_value = "30s"},
    {.commands = "sem status",
     .names = "--limit",
     .value = "N",
     .help = "most permits and waiters listed (default 1000, at most 10000)"},
    {.commands = "sem status",
     .names = "--after",
     .value = "C",
     .help = "list the page after the one whose \"next\" was C"},
    {.commands = "sem exec",
     .names = "name",
     .value = "NAME",
     .help = "semaphore name; then -- CMD [ARGS...]"},
};

}  // namespace

std::span<const Flag> sem_flags() { return kSemFlags; }

}  // namespace rlock::cli
