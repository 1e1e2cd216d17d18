#pragma once

// What the limiter's integration test files share: its keys and one decision through the
// binary.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "harness.hpp"

namespace rlock::test {

inline std::string limiter_key(const std::string& name) { return "rlock:limit:{" + name + "}"; }
inline std::string clients_key(const std::string& name) { return limiter_key(name) + ":clients"; }

// One decision; `status` is what it must exit with.
inline json decide(const RedisServer& redis, const std::vector<std::string>& args, int status = 0) {
  std::vector<std::string> argv = {"limit"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = rlock(redis, argv);
  INFO("args: " << json(argv).dump() << "\nstderr: " << r.err);
  REQUIRE(r.status == status);
  return parse_json(r.out);
}

// Reads `-v` stderr lines of `p` until it says it sleeps before retrying; false when it
// does not within 5s.
inline bool saw_retrying(Spawned& p) {
  while (auto line = p.read_err_line(deadline(5s))) {
    if (line->find("retrying in") != std::string::npos) return true;
  }
  return false;
}

}  // namespace rlock::test
