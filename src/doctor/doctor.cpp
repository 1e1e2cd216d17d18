#include "doctor/doctor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "redis/errors.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::doctor {
namespace {

using Fields = std::map<std::string, std::string>;

// An INFO section as name -> value.
Fields info(redis::Topology& t, const std::string& section) {
  redis::Reply r = t.command({"INFO", section}, redis::Retry::kIdempotent);
  Fields out;
  std::string text = r.str();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (!line.empty() && line[0] != '#' && colon != std::string::npos)
      out[line.substr(0, colon)] = line.substr(colon + 1);
    pos = end + 1;
  }
  return out;
}

// CONFIG GET name, or nullopt when this user may not read it (managed services rename or
// forbid CONFIG).
std::optional<std::string> config(redis::Topology& t, const std::string& name) {
  try {
    redis::Reply r = t.command({"CONFIG", "GET", name}, redis::Retry::kIdempotent);
    if (r.is_array() && r.size() == 2) return r.at(1).str();
  } catch (const redis::ReplyError&) {
  }
  return std::nullopt;
}

long long number(const Fields& f, const std::string& name, long long otherwise = -1) {
  auto it = f.find(name);
  if (it == f.end()) return otherwise;
  return std::strtoll(it->second.c_str(), nullptr, 10);
}

std::string field(const Fields& f, const std::string& name) {
  auto it = f.find(name);
  return it == f.end() ? std::string() : it->second;
}

struct Checker {
  redis::Topology& t;
  std::string server;
  std::vector<Finding>& out;
  void add(const std::string& check, Level level, const std::string& detail) {
    out.push_back({server, check, level, detail});
  }
};

void check_version(Checker& c, const Fields& server, bool cluster) {
  std::string v = field(server, "redis_version");
  int major = std::atoi(v.c_str());
  if (major >= 7) {
    c.add("version", Level::kOk, "Redis " + v);
  } else if (major == 6) {
    c.add("version", cluster ? Level::kFail : Level::kWarn,
          "Redis " + v + ": no sharded pub/sub" +
              (cluster ? ", which a cluster's waiters need (Redis 7 or later)"
                       : " (waiters use classic pub/sub; a cluster would be refused)"));
  } else {
    c.add("version", Level::kFail, "Redis " + v + ": rlock's scripts need Redis 6 or later");
  }
}

void check_persistence(Checker& c, const Fields& persistence) {
  std::optional<std::string> fsync = config(c.t, "appendfsync");
  std::optional<std::string> save = config(c.t, "save");
  if (number(persistence, "aof_enabled") == 1) {
    std::string policy = fsync.value_or("(not readable)");
    std::string loss = policy == "always"     ? "nothing acknowledged"
                       : policy == "everysec" ? "up to a second of lock changes"
                                              : "what the OS had not written yet";
    c.add("persistence", Level::kOk,
          "AOF, appendfsync " + policy + ": a restart keeps held locks, losing " + loss +
              "; a holder that lost its lock is told by its next renewal");
  } else if (!save) {
    c.add("persistence", Level::kUnknown,
          "no AOF; CONFIG GET save refused, so RDB snapshots are unknown: a restart may forget "
          "held locks (their holders' renewals then stop the jobs)");
  } else if (save->empty()) {
    c.add("persistence", Level::kWarn,
          "none: a restart forgets every held lock (their holders' next renewals stop the "
          "jobs, exit 76); fencing tokens still only grow (they follow the server clock)");
  } else {
    c.add("persistence", Level::kWarn,
          "RDB only (save " + *save +
              "): a restart forgets locks taken since the last snapshot (their holders' next "
              "renewals stop the jobs, exit 76)");
  }
}

void check_eviction(Checker& c, const Fields& memory) {
  std::string policy = field(memory, "maxmemory_policy");
  long long maxmemory = number(memory, "maxmemory", 0);
  if (policy.empty()) {
    c.add("eviction", Level::kUnknown, "INFO memory has no maxmemory_policy");
  } else if (policy == "noeviction" || maxmemory == 0) {
    c.add("eviction", Level::kOk,
          "maxmemory-policy " + policy +
              (maxmemory == 0 ? " with no maxmemory: nothing is evicted"
                              : ": nothing is evicted (writes fail when memory is full)"));
  } else {
    c.add("eviction", Level::kFail,
          "maxmemory-policy " + policy +
              " evicts keys when memory is full, and lock keys "
              "(which have a TTL) are among them: a held lock can vanish and be taken twice; "
              "use noeviction or a server of its own");
  }
}

void check_timeout(Checker& c) {
  std::optional<std::string> timeout = config(c.t, "timeout");
  if (!timeout) return c.add("timeout", Level::kUnknown, "CONFIG GET timeout refused");
  long long seconds = std::strtoll(timeout->c_str(), nullptr, 10);
  if (seconds == 0) return c.add("timeout", Level::kOk, "idle connections are kept");
  c.add("timeout", Level::kWarn,
        "the server closes connections idle for " + *timeout +
            "s: waiters reconnect and keep their place, but each drop costs a reconnect");
}

void check_latency(Checker& c) {
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    c.t.command({"PING"}, redis::Retry::kIdempotent);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  char text[96];
  std::snprintf(text, sizeof text, "round trip %.2f ms (median of 5 PINGs)", median);
  c.add("latency", median > 50 ? Level::kWarn : Level::kOk,
        std::string(text) + (median > 50 ? ": every acquisition and renewal waits that long" : ""));
}

void check_clock(Checker& c) {
  auto before = std::chrono::system_clock::now();
  redis::Reply r = c.t.command({"TIME"}, redis::Retry::kIdempotent);
  auto after = std::chrono::system_clock::now();
  if (!r.is_array() || r.size() != 2) return c.add("clock", Level::kUnknown, "TIME gave no time");
  long long server_us = r.at(0).integer() * 1'000'000 + r.at(1).integer();
  long long here_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          (before.time_since_epoch() + after.time_since_epoch()) / 2)
                          .count();
  long long offset_ms = (server_us - here_us) / 1000;
  std::string text = "server clock " + std::string(offset_ms >= 0 ? "+" : "-") +
                     format_duration(Millis(std::llabs(offset_ms))) + " from this host's";
  bool far = std::llabs(offset_ms) > 2000;
  c.add("clock", far ? Level::kWarn : Level::kOk,
        text + (far ? ": rlock decides on the server's clock, so locks stay right, but times "
                      "it prints (--at, due times) differ from this host's by that much"
                    : ""));
}

void check_replication(Checker& c, const Fields& replication, bool replicated_topology) {
  std::string role = field(replication, "role");
  long long replicas = number(replication, "connected_slaves", 0);
  std::optional<std::string> min_replicas = config(c.t, "min-replicas-to-write");
  std::string detail = "role " + role + ", " + std::to_string(replicas) + " replica(s) connected";
  long long worst_lag = -1;
  for (long long i = 0; i < replicas; ++i) {
    std::string entry = field(replication, "slave" + std::to_string(i));
    size_t at = entry.find("lag=");
    if (at != std::string::npos)
      worst_lag = std::max(worst_lag, std::strtoll(entry.c_str() + at + 4, nullptr, 10));
  }
  if (worst_lag >= 0) detail += ", worst lag " + std::to_string(worst_lag) + "s";
  if (min_replicas) detail += ", min-replicas-to-write " + *min_replicas;
  Level level = Level::kOk;
  if (replicated_topology && replicas == 0) {
    level = Level::kWarn;
    detail += ": no replica to fail over to";
  } else if (worst_lag > 10) {
    level = Level::kWarn;
    detail += ": a failover now loses the lock changes of the last " + std::to_string(worst_lag) +
              "s (--sync-replicas narrows that)";
  } else if (replicas > 0) {
    detail += ": a failover can lose a lock taken just before it (--sync-replicas narrows that)";
  }
  c.add("replication", level, detail);
}

void check_cluster(Checker& c) {
  redis::Reply r = c.t.command({"CLUSTER", "INFO"}, redis::Retry::kIdempotent);
  std::string text = r.str();
  bool ok = text.find("cluster_state:ok") != std::string::npos;
  c.add("cluster", ok ? Level::kOk : Level::kFail,
        ok ? "cluster_state ok" : "cluster_state is not ok: requests get CLUSTERDOWN");
}

// The rights of rlock(1)'s ACL section, each with a command that needs exactly it.
std::vector<std::pair<std::string, std::vector<std::string>>> rights(const std::string& key,
                                                                     const std::string& chan,
                                                                     bool cluster) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out = {
      {"evalsha", {"EVALSHA", std::string(40, '0'), "1", key}},
      {"eval", {"EVAL", "return 0", "1", key}},
      {"ssubscribe", {"SSUBSCRIBE", chan}},
      {"sunsubscribe", {"SUNSUBSCRIBE", chan}},
      {"ping", {"PING"}},
      {"scan", {"SCAN", "0"}},
      {"dbsize", {"DBSIZE"}},
      {"hgetall", {"HGETALL", key}},
      {"pttl", {"PTTL", key}},
      {"get", {"GET", key}},
      {"zcard", {"ZCARD", key}},
      {"type", {"TYPE", key}},
      {"hvals", {"HVALS", key}},
      {"time", {"TIME"}},
      {"zrangebyscore", {"ZRANGEBYSCORE", key, "0", "1"}},
      {"zrem", {"ZREM", key, "m"}},
      {"zrange", {"ZRANGE", key, "0", "1"}},
      {"pubsub|shardnumsub", {"PUBSUB", "SHARDNUMSUB", chan}},
      {"hset", {"HSET", key, "f", "v"}},
      {"pexpire", {"PEXPIRE", key, "1"}},
      {"set", {"SET", key, "v"}},
      {"spublish", {"SPUBLISH", chan, "m"}},
      {"del", {"DEL", key}},
      {"hget", {"HGET", key, "f"}},
      {"hincrby", {"HINCRBY", key, "f", "1"}},
      {"zscore", {"ZSCORE", key, "m"}},
      {"zadd", {"ZADD", key, "1", "m"}},
      {"exists", {"EXISTS", key}},
      {"hexists", {"HEXISTS", key, "f"}},
      {"hdel", {"HDEL", key, "f"}},
      {"hkeys", {"HKEYS", key}},
      {"decrby", {"DECRBY", key, "1"}},
      {"sadd", {"SADD", key, "m"}},
      {"sismember", {"SISMEMBER", key, "m"}},
      {"scard", {"SCARD", key}},
      {"srandmember", {"SRANDMEMBER", key}},
      {"sscan", {"SSCAN", key, "0"}},
      {"hscan", {"HSCAN", key, "0"}},
      {"hmget", {"HMGET", key, "f"}},
      {"zremrangebyscore", {"ZREMRANGEBYSCORE", key, "0", "1"}},
      {"hlen", {"HLEN", key}},
      {"llen", {"LLEN", key}},
      {"rpush", {"RPUSH", key, "v"}},
      {"lpop", {"LPOP", key}},
      {"zcount", {"ZCOUNT", key, "0", "1"}},
  };
  if (cluster) {
    out.push_back({"cluster|shards", {"CLUSTER", "SHARDS"}});
    out.push_back({"asking", {"ASKING"}});
  }
  return out;
}

void check_acl(Checker& c, const std::string& prefix, bool cluster) {
  std::string user;
  try {
    user = c.t.command({"ACL", "WHOAMI"}, redis::Retry::kIdempotent).str();
  } catch (const redis::ReplyError& e) {
    return c.add("acl", Level::kUnknown,
                 "ACL WHOAMI refused (" + e.code() + "): rights not checked");
  }
  auto needed = rights(prefix + "lock:{doctor}", prefix + "chan:{doctor}:lock", cluster);
  std::vector<std::vector<std::string>> dryruns;
  for (const auto& [right, argv] : needed) {
    std::vector<std::string> cmd = {"ACL", "DRYRUN", user};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    dryruns.push_back(std::move(cmd));
  }
  std::vector<redis::Reply> replies = c.t.pipeline(dryruns, redis::Retry::kIdempotent);
  std::string missing;
  for (size_t i = 0; i < replies.size(); ++i) {
    const redis::Reply& r = replies[i];
    std::string text = r.str();
    if (r.is_error()) {
      // DRYRUN itself refused, or unknown (Redis < 7): nothing can be said about the rest.
      return c.add(
          "acl", Level::kUnknown,
          "ACL DRYRUN not available to user " + user + " (" + text + "): rights not checked");
    }
    // Allowed: OK. Refused: a sentence saying which command, key or channel.
    if (text != "OK") missing += (missing.empty() ? "+" : " +") + needed[i].first;
  }
  if (missing.empty()) {
    c.add("acl", Level::kOk, "user " + user + " has every right rlock(1)'s ACL section lists");
  } else {
    c.add("acl", Level::kFail,
          "user " + user + " lacks " + missing +
              " (see ACL in rlock(1)): the scripts that need "
              "them refuse at once, exit 77");
  }
}

}  // namespace

std::string_view level_name(Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "fail";
    case Level::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::vector<Finding> examine(redis::Topology& topology, const std::string& prefix) {
  std::vector<Finding> out;
  topology.for_each_master([&](redis::Topology& t) {
    Checker c{t, t.server_name(), out};
    // A command this user may not run (an ACL, a managed service's renamed commands) makes
    // its check unknown; a server that does not answer ends the examination (exit 69).
    auto guarded = [&c](const std::string& check, const std::function<void()>& run) {
      try {
        run();
      } catch (const UnavailableError&) {
        throw;
      } catch (const Error& e) {
        c.add(check, Level::kUnknown, std::string("not checked: ") + e.what());
      }
    };
    bool cluster = false;
    guarded("version", [&] {
      cluster = number(info(t, "cluster"), "cluster_enabled", 0) == 1;
      check_version(c, info(t, "server"), cluster);
    });
    guarded("persistence", [&] { check_persistence(c, info(t, "persistence")); });
    guarded("eviction", [&] { check_eviction(c, info(t, "memory")); });
    guarded("timeout", [&] { check_timeout(c); });
    guarded("latency", [&] { check_latency(c); });
    guarded("clock", [&] { check_clock(c); });
    guarded("replication", [&] {
      check_replication(c, info(t, "replication"), cluster || topology.replicated());
    });
    if (cluster) guarded("cluster", [&] { check_cluster(c); });
    guarded("acl", [&] { check_acl(c, prefix, cluster); });
  });
  return out;
}

}  // namespace rlock::doctor
