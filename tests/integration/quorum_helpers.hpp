#pragma once

// What the quorum's integration test files share: members of their own and rlock run
// against them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "harness.hpp"
#include "redis/script.hpp"

namespace rlock::test {

// Three (or more) members of their own, plain standalone servers whatever
// RLOCK_TEST_TOPOLOGY says: a quorum's members are independent masters.
struct Members {
  explicit Members(int n = 3, std::string password = "") : userinfo(password) {
    for (int i = 0; i < n; ++i)
      servers.emplace_back(RedisOptions{.requirepass = password, .test_topology = false});
  }
  std::string url() const {
    std::string out = "redis-quorum://" + (userinfo.empty() ? "" : ":" + userinfo + "@");
    for (size_t i = 0; i < servers.size(); ++i)
      out += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(servers[i].port());
    return out;
  }
  // Members holding `owner` in the lock hash of `name`, but for member `frozen` (which
  // would not answer).
  int holding(const std::string& name, const std::string& owner, int frozen = -1) const {
    int n = 0;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (static_cast<int>(i) != frozen)
        n += servers[i].cmd_int({"HEXISTS", lock_key(name), owner}) == 1;
    }
    return n;
  }
  // Every member has the lock's scripts: a grant that a fresh member answers NOSCRIPT later
  // than the drain's patience after a majority granted is not sent again (it took nothing
  // there), so a test that needs every member to hold loads them first, and then waits:
  // rlock returns at a majority.
  void cache_lock_scripts() const {
    for (const auto& s : servers) {
      for (const redis::Script* script :
           {&redis::scripts::quorum_member, &redis::scripts::lock_acquire})
        s.cmd({"SCRIPT", "LOAD", script->source});
    }
  }
  std::string userinfo;
  std::vector<RedisServer> servers;
};

inline RunResult on(const Members& q, std::vector<std::string> args, const Env& env = {},
                    std::chrono::milliseconds timeout = 30s) {
  args.insert(args.begin(), {"--url", q.url()});
  return rlock_raw(args, env, timeout);
}

inline Spawned spawn_on(const Members& q, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {rlock_binary(), "--url", q.url()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

inline long long fence_of(const RunResult& r) {
  INFO("stdout: " << r.out << " stderr: " << r.err);
  REQUIRE(r.status == 0);
  return parse_json(r.out).at("fence").get<long long>();
}

// A member's clock, microseconds since the epoch.
inline long long server_us(const RedisServer& s) {
  const auto t = s.cmd({"TIME"});
  return std::stoll(t.at(0)) * 1'000'000 + std::stoll(t.at(1));
}

inline bool one_line(const std::string& err) {
  return !err.empty() && err.find('\n') == err.size() - 1;
}

}  // namespace rlock::test
