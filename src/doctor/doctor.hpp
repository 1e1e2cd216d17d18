#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redis/topology.hpp"

namespace rlock::doctor {

// How a finding bears on locks: kFail is a setting that can break them (an eviction policy
// that can drop lock keys, a cluster that is down, a right the scripts need); kWarn is
// worth knowing (no persistence, idle connections closed, a clock far off); kUnknown is
// what this user may not read (CONFIG, ACL DRYRUN refused).
enum class Level { kOk, kWarn, kFail, kUnknown };
std::string_view level_name(Level level);

struct Finding {
  std::string server;  // host:port of the master it is about
  std::string check;   // version, persistence, eviction, timeout, latency, clock, acl, ...
  Level level = Level::kOk;
  std::string detail;  // one line: what was found and what it means for locks
};

// Checks every master of `topology` (each once) with read-only commands. `prefix` names
// the keys and channels the ACL check asks about. Throws UnavailableError when a master
// cannot be reached; everything else becomes a finding.
std::vector<Finding> examine(redis::Topology& topology, const std::string& prefix);

}  // namespace rlock::doctor
