#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prim/key_layout.hpp"
#include "prim/lock.hpp"
#include "redis/topology.hpp"

namespace rlock::inspect {

// What `rlock inspect` shows of one lock.
struct LockView {
  std::string name;
  std::string key;
  std::vector<prim::Holder> holders;
  long long ttl_ms = -1;           // -1: no expiry
  std::optional<long long> fence;  // current token, if any was ever issued
  long long waiters = 0;           // waits queued for it
  std::string error;               // non-empty: the key is not a well-formed lock
};

// Finds the held locks whose names match `name_glob` with SCAN (never KEYS) and reads
// the state of all of them in one pipelined round trip. Sorted by name.
std::vector<LockView> scan_locks(redis::Topology& topology, const prim::KeyLayout& layout,
                                 std::string_view name_glob);

}  // namespace rlock::inspect
