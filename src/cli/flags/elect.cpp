#include "cli/flag_table.hpp"

namespace rlock::cli {
namespace {

constexpr Flag kElectFlags[] = {
    {.commands = "elect",
     .names = "name",
     .value = "NAME",
     .help = "the election (a lock name); then -- CMD [ARGS...], run while leading"},
    {.commands = "elect",
     .names = "--observe",
     .value = "",
     .help = "print a JSON line per change of leader until INT or TERM; no command",
     .man = R"roff(Do not campaign: print who leads
.I NAME
as one JSON line,
.BR {"name":\fINAME\fP,"leader":{"owner","note","fence","since"}} ,
or
.B \(dqleader\(dq:null
while nobody does, then one more line at every change of leader, until INT,
TERM, HUP or QUIT (exit status 0).
It never polls: a new exclusive holder of the lock announces itself to its
observers, a release is published, and a leader that stops renewing is seen
at the end of the lease last read.
Across a failover or an outage it reconnects, as a waiter does, and prints
the leader it then finds if that changed.)roff"},
};

}  // namespace

std::span<const Flag> elect_flags() { return kElectFlags; }

}  // namespace rlock::cli
