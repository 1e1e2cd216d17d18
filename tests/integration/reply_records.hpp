// Reply records (rlock:req:{NAME}:ID, kept 60s, so that a request repeated after a lost
// reply gets its first run's reply back: `once` in lua/include/common.lua) are not state an
// object leaves behind: what tests of "nothing is left" look at, without them.
#pragma once

#include <string>
#include <vector>

#include "harness.hpp"

namespace rlock::test {

// KEYS * without the reply records of `prefix`.
inline std::vector<std::string> keys_but_reply_records(const RedisServer& redis,
                                                       const std::string& prefix = "rlock:") {
  std::vector<std::string> out;
  for (auto& k : redis.cmd({"KEYS", "*"})) {
    if (k.rfind(prefix + "req:{", 0) != 0) out.push_back(std::move(k));
  }
  return out;
}

}  // namespace rlock::test
