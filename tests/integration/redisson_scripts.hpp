// What every --layout redisson test shares: tests/redisson's peers (node-redisson and
// ioredis from its lock file), Redisson's scripts run verbatim with redis-cli EVAL
// (tests/redisson/README says where they come from), and a listener on a Redisson channel.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "harness.hpp"

namespace rlock::test::redisson {

inline const std::string kPeerDir = std::string(RLOCK_SOURCE_DIR) + "/tests/redisson";

// tests/redisson's node modules (node-redisson, ioredis), installed once per run when
// `module` is missing.
inline bool peers_installed(const std::string& module = "node-redisson") {
  static int ready = -1;
  if (ready < 0) {
    ready =
        access((kPeerDir + "/node_modules/" + module).c_str(), F_OK) == 0 ||
        run({"npm", "ci", "--no-audit", "--no-fund", "--prefix", kPeerDir}, {}, 120s).status == 0;
  }
  return ready == 1;
}

// The client's clock, as Redisson passes System.currentTimeMillis().
inline long long epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Redisson's script `file` run verbatim through redis-cli EVAL.
inline RunResult redisson_eval(const RedisServer& redis, const std::string& file,
                               const std::vector<std::string>& keys,
                               const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"redis-cli",
                                   "-p",
                                   std::to_string(redis.port()),
                                   "EVAL",
                                   read_file(kPeerDir + "/" + file),
                                   std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

// The same, required to succeed: its reply's text.
inline std::string eval(const RedisServer& redis, const std::string& file,
                        const std::vector<std::string>& keys,
                        const std::vector<std::string>& args) {
  auto r = redisson_eval(redis, file, keys, args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return r.out;
}

// A Java RPermitExpirableSemaphore or RSemaphore client (tests/redisson/sem_peer.js) on
// `name`; `sharded`: Redisson's sharded mode (SPUBLISH, SSUBSCRIBE).
inline Spawned sem_peer(const RedisServer& redis, const std::string& name,
                        std::vector<std::string> args, bool sharded = false) {
  std::vector<std::string> argv = {"env",
                                   std::string("SHARDED=") + (sharded ? "1" : "0"),
                                   "node",
                                   kPeerDir + "/sem_peer.js",
                                   std::to_string(redis.port()),
                                   name};
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

// A redis-cli subscribed (SUBSCRIBE, or SSUBSCRIBE for Redisson's sharded mode) to
// `channel`, past its confirmation.
struct ChannelListener {
  Spawned sub;
  ChannelListener(const RedisServer& redis, const std::string& channel,
                  const std::string& how = "SUBSCRIBE")
      : sub({"redis-cli", "-p", std::to_string(redis.port()), how, channel}) {
    for (int i = 0; i < 3; ++i) REQUIRE(sub.read_line(deadline(5s)).has_value());
  }
  // The next message's payload.
  std::string next() {
    auto kind = sub.read_line(deadline(5s));
    REQUIRE(kind.has_value());
    REQUIRE(sub.read_line(deadline(5s)).has_value());  // the channel
    auto payload = sub.read_line(deadline(5s));
    REQUIRE(payload.has_value());
    return *payload;
  }
};

}  // namespace rlock::test::redisson
