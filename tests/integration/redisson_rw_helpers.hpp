// Redisson's RReadWriteLock as its Java client drives it, for redisson_rw_test.cpp and
// redisson_rw_fault_test.cpp: its scripts' Lua text run verbatim with redis-cli EVAL
// (tests/redisson/README says where they come from), with the keys, fields and arguments
// Redisson passes.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "harness.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test::redisson_rw {

using redisson::epoch_ms;
using redisson::eval;
using redisson::kPeerDir;

inline const std::string kJava = "0f0e0d0c-0b0a-4908-8706-050403020100:7";
inline const std::string kJava2 = "0f0e0d0c-0b0a-4908-8706-050403020100:8";

inline std::vector<std::string> in_rw(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson", "--redisson-object", "read-write-lock"});
  return args;
}

inline std::string channel_of(const std::string& name) { return "redisson_rwlock:{" + name + "}"; }

// Java's side, as RedissonReadLock / RedissonWriteLock call the scripts. A lock call
// answers "\n" (nil) when taken, else the lease left.
struct Java {
  const RedisServer& redis;
  std::string name;
  std::string field = kJava;

  std::string timeouts() const { return "{" + name + "}:" + field + ":rwlock_timeout"; }
  // Redisson's unlock latch: a name of its own per request.
  std::string latch() const {
    static int n = 0;
    return "redisson_unlock_latch:{" + name + "}:req-" + std::to_string(epoch_ms()) + "-" +
           std::to_string(++n);
  }
  std::string read_lock(long long lease_ms = 30000) const {
    return eval(redis, "redisson_rw_read_try_lock.lua", {name, timeouts()},
                {std::to_string(lease_ms), field, field + ":write"});
  }
  std::string read_unlock(const std::string& publish = "publish") const {
    return eval(redis, "redisson_rw_read_unlock.lua",
                {name, channel_of(name), timeouts(), "{" + name + "}", latch()},
                {"0", field, publish, "30000"});
  }
  std::string write_lock(long long lease_ms = 30000) const {
    return eval(redis, "redisson_rw_write_try_lock.lua", {name},
                {std::to_string(lease_ms), field + ":write"});
  }
  std::string write_unlock(const std::string& publish = "publish") const {
    return eval(redis, "redisson_rw_write_unlock.lua", {name, channel_of(name), latch()},
                {"1", "30000", field + ":write", publish, "30000"});
  }
};

inline void append_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

inline bool taken(const std::string& reply) { return reply == "\n"; }

// A redis-cli subscribed to Redisson's rwlock channel of `name`.
struct Listener : redisson::ChannelListener {
  Listener(const RedisServer& redis, const std::string& name, const std::string& how = "SUBSCRIBE")
      : ChannelListener(redis, channel_of(name), how) {}
};

}  // namespace rlock::test::redisson_rw
