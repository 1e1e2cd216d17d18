#include "doctor/doctor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "doctor/server_info.hpp"
#include "redis/errors.hpp"
#include "redis/quorum_restart_rule.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::doctor {
namespace {

using Fields = InfoFields;

Fields info(redis::Topology& t, const std::string& section) {
  return info_fields(t.command({"INFO", section}, redis::Retry::kIdempotent).str());
}

// CONFIG GET name, or nullopt when this user may not read it (managed services rename or
// forbid CONFIG): then `refusal` is the server's answer.
std::optional<std::string> config(redis::Topology& t, const std::string& name,
                                  std::string& refusal) {
  try {
    redis::Reply r = t.command({"CONFIG", "GET", name}, redis::Retry::kIdempotent);
    if (r.is_array() && r.size() == 2) return r.at(1).str();
    refusal = "no such setting";
  } catch (const redis::ReplyError& e) {
    refusal = e.reply();
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
  std::string refusal;  // the server's answer to the last CONFIG GET that gave nothing
  void add(const std::string& check, Level level, const std::string& detail) {
    out.push_back({server, check, level, detail});
  }
  std::optional<std::string> config(const std::string& name) {
    return doctor::config(t, name, refusal);
  }
  // " (the server's answer)" after a CONFIG GET refused.
  std::string why_refused() const { return " (" + refusal + ")"; }
};

void check_version(Checker& c, const ServerKind& kind, bool cluster) {
  const std::string v = kind.product + " " + kind.version;
  const std::string compatible =
      kind.product == "Redis" ? ""
                              : " (commands of Redis " + std::to_string(kind.redis_major) + ")";
  if (kind.redis_major >= 7) {
    c.add("version", Level::kOk, v + compatible);
  } else if (kind.redis_major == 6) {
    c.add("version", cluster ? Level::kFail : Level::kWarn,
          v + compatible + ": no sharded pub/sub" +
              (cluster ? ", which a cluster's waiters need (Redis 7 or later)"
                       : " (waiters use classic pub/sub; a cluster would be refused)"));
  } else {
    c.add("version", Level::kFail, v + compatible + ": rlock's scripts need Redis 6 or later");
  }
}

// What a Redis-compatible server does otherwise than Redis where locks depend on it.
void check_compatibility(Checker& c, const ServerKind& kind) {
  if (kind.active_replica) {
    c.add("active-replica", Level::kFail,
          "KeyDB active replication: replicas take writes too and merge them, so two clients "
          "can each hold one lock on another server; rlock needs one master per lock "
          "(active-replica no)");
  }
  if (kind.product == "Dragonfly") {
    c.add("compatibility", Level::kWarn,
          "Dragonfly: no WAIT (--sync-replicas is refused), keyspace notifications for "
          "expiries only (inspect --watch lists every --interval), and scripts may touch only "
          "the keys they declare (rlock's do)");
  }
}

void check_persistence(Checker& c, const Fields& persistence) {
  std::optional<std::string> fsync = c.config("appendfsync");
  std::optional<std::string> save = c.config("save");
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
          "no AOF; CONFIG GET save refused" + c.why_refused() +
              ", so RDB snapshots are unknown: a restart may forget held locks (their holders' "
              "renewals then stop the jobs)");
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
  std::optional<std::string> timeout = c.config("timeout");
  if (!timeout)
    return c.add("timeout", Level::kUnknown, "CONFIG GET timeout refused" + c.why_refused());
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

// One replica as INFO replication lists it: "ip=H,port=P,state=online,offset=N,lag=S".
struct Replica {
  std::string address;
  std::string state;
  long long offset = -1;
  long long lag = -1;  // seconds since its last acknowledgement (sent every second)
};

std::vector<Replica> replicas(const Fields& replication) {
  std::vector<Replica> out;
  for (long long i = 0;; ++i) {
    auto entry = replication.find("slave" + std::to_string(i));
    if (entry == replication.end()) return out;
    Fields parts;
    size_t pos = 0;
    while (pos <= entry->second.size()) {
      size_t end = std::min(entry->second.find(',', pos), entry->second.size());
      std::string part = entry->second.substr(pos, end - pos);
      size_t eq = part.find('=');
      if (eq != std::string::npos) parts[part.substr(0, eq)] = part.substr(eq + 1);
      pos = end + 1;
    }
    out.push_back({field(parts, "ip") + ":" + field(parts, "port"), field(parts, "state"),
                   number(parts, "offset"), number(parts, "lag")});
  }
}

// A replica whose last acknowledgement is older than this is not keeping up: the lock
// changes of that long are what a failover to it loses.
constexpr long long kLagWarnSeconds = 1;

void check_replication(Checker& c, const Fields& replication, bool replicated_topology) {
  std::string role = field(replication, "role");
  long long master_offset = number(replication, "master_repl_offset");
  std::vector<Replica> all = replicas(replication);
  std::string detail = "role " + role + ", " + std::to_string(all.size()) + " replica(s) connected";
  long long online = 0, worst_lag = -1;
  std::string lagging;
  for (const Replica& r : all) {
    detail += "; " + r.address + " " + r.state + ", lag " + std::to_string(r.lag) + "s";
    if (master_offset >= 0 && r.offset >= 0)
      detail += ", " + std::to_string(master_offset - r.offset) + " bytes behind";
    if (r.state == "online") ++online;
    worst_lag = std::max(worst_lag, r.lag);
    if (r.lag > kLagWarnSeconds) lagging += (lagging.empty() ? "" : ", ") + r.address;
  }
  Level level = Level::kOk;
  if (replicated_topology && online == 0) {
    level = Level::kWarn;
    detail += ": no replica online to fail over to";
  } else if (!lagging.empty()) {
    level = Level::kWarn;
    detail += ": " + lagging + " lags more than " + std::to_string(kLagWarnSeconds) +
              "s behind; a failover to it loses the lock changes of the last " +
              std::to_string(worst_lag) + "s (--sync-replicas narrows that)";
  } else if (online > 0) {
    detail += ": a failover can lose a lock taken just before it (--sync-replicas narrows that)";
  }
  c.add("replication", level, detail);
}

void check_min_replicas(Checker& c, const Fields& replication, bool replicated_topology) {
  std::optional<std::string> min = c.config("min-replicas-to-write");
  if (!min) {
    return c.add("min-replicas", Level::kUnknown,
                 "CONFIG GET min-replicas-to-write refused" + c.why_refused() +
                     ": whether a master cut off from its replicas keeps taking locks is unknown");
  }
  long long wanted = std::strtoll(min->c_str(), nullptr, 10);
  std::string max_lag = c.config("min-replicas-max-lag").value_or("?");
  long long good = 0;
  for (const Replica& r : replicas(replication)) {
    if (r.state == "online" && r.lag <= std::strtoll(max_lag.c_str(), nullptr, 10)) ++good;
  }
  std::string head = "min-replicas-to-write " + *min;
  if (wanted == 0) {
    bool matters = replicated_topology || good > 0;
    return c.add("min-replicas", matters ? Level::kWarn : Level::kOk,
                 head + (matters ? ": a master cut off from its replicas keeps accepting holds "
                                   "that a failover then loses (two holders); 1 makes it refuse "
                                   "them after min-replicas-max-lag " +
                                       max_lag + "s"
                                 : ": no replica to wait for"));
  }
  if (good < wanted) {
    return c.add("min-replicas", Level::kFail,
                 head + " (max lag " + max_lag + "s) and " + std::to_string(good) +
                     " replica(s) within it: the master refuses every lock change now "
                     "(NOREPLICAS)");
  }
  c.add("min-replicas", Level::kOk,
        head + " (max lag " + max_lag + "s), " + std::to_string(good) +
            " replica(s) within it: a master cut off from its replicas stops taking holds "
            "after " +
            max_lag + "s, so a failover loses at most that much");
}

void check_sharded_pubsub(Checker& c, const ServerKind& kind) {
  const std::string v = kind.product + " " + kind.version;
  if (kind.redis_major >= 7) {
    c.add("sharded-pubsub", Level::kOk,
          v + " has SSUBSCRIBE: waiters wait on the node of their lock's slot");
  } else {
    c.add("sharded-pubsub", Level::kFail,
          v + " has no sharded pub/sub (Redis 7 or later): waiters cannot wait on a cluster");
  }
}

void check_cluster(Checker& c) {
  Fields cluster = info_fields(c.t.command({"CLUSTER", "INFO"}, redis::Retry::kIdempotent).str());
  std::string state = field(cluster, "cluster_state");
  std::optional<std::string> full = c.config("cluster-require-full-coverage");
  std::string coverage =
      !full            ? "cluster-require-full-coverage not readable" + c.why_refused()
      : *full == "yes" ? "cluster-require-full-coverage yes: a slot without a master stops every "
                         "lock of the cluster until it is served again"
                       : "cluster-require-full-coverage no: a slot without a master stops only "
                         "the locks of that slot";
  c.add("cluster", state == "ok" ? Level::kOk : Level::kFail,
        "cluster_state " + state + (state == "ok" ? "" : " (requests get CLUSTERDOWN)") + "; " +
            coverage);
  long long served = number(cluster, "cluster_slots_ok", 0);
  c.add("slots", served == 16384 ? Level::kOk : Level::kFail,
        "cluster_slots_ok " + std::to_string(served) + " of 16384" +
            (served == 16384 ? ": every slot is served"
                             : " (assigned " + field(cluster, "cluster_slots_assigned") +
                                   ", pfail " + field(cluster, "cluster_slots_pfail") + ", fail " +
                                   field(cluster, "cluster_slots_fail") +
                                   "): locks whose name hashes to the others get CLUSTERDOWN"));
}

using Expiry = std::optional<std::chrono::system_clock::time_point>;

// A certificate that expires soon is renewed in time only if someone is told.
constexpr int kCertificateWarnDays = 30;

void check_certificate(std::vector<Finding>& out, const std::string& server, const Expiry& until) {
  if (!until) return;
  std::time_t t = std::chrono::system_clock::to_time_t(*until);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &utc);
  auto left = *until - std::chrono::system_clock::now();
  long long days = std::chrono::duration_cast<std::chrono::hours>(left).count() / 24;
  if (left <= std::chrono::seconds(0)) {
    out.push_back({server, "certificate", Level::kFail,
                   std::string("the server's TLS certificate expired on ") + date +
                       ": only --tls-insecure connects; with verification every client is "
                       "refused (exit 69)"});
  } else if (days < kCertificateWarnDays) {
    out.push_back({server, "certificate", Level::kWarn,
                   std::string("the server's TLS certificate expires on ") + date + ", in " +
                       std::to_string(days) +
                       " day(s): after that every client that verifies it is refused (exit 69)"});
  } else {
    out.push_back({server, "certificate", Level::kOk,
                   std::string("the server's TLS certificate is valid until ") + date + " (" +
                       std::to_string(days) + " days)"});
  }
}

// Each sentinel reachable or not, and whether the reachable ones can agree on a failover
// (SENTINEL CKQUORUM): without that, a master that dies stays dead and so do its locks.
void check_sentinels(const redis::Topology::Sentinels& sentinels, const std::string& master,
                     std::vector<Finding>& out) {
  size_t reachable = 0, agreeing = 0, refused = 0;
  std::string verdicts;  // the first sentinel's refusal
  for (redis::ConnectOptions options : sentinels.each) {
    std::string where = options.endpoint.describe();
    // A sentinel that does not answer must not hold the examination up for long.
    options.connect_timeout = std::min(options.connect_timeout, Millis(1000));
    options.command_timeout = std::min(options.command_timeout, Millis(1000));
    std::string answer;
    try {
      redis::Connection conn = redis::Connection::open(options);
      check_certificate(out, where, conn.peer_certificate_expiry());
      ++reachable;
      try {
        answer = redis::Reply(conn.command({"SENTINEL", "CKQUORUM", sentinels.master_name})).str();
        ++agreeing;
      } catch (const redis::ReplyError& e) {
        if (e.code() == "NOPERM") {
          // The sentinels' user may not ask: that says nothing about the quorum.
          --reachable;
          ++refused;
          out.push_back({where, "sentinel", Level::kUnknown,
                         "reachable; SENTINEL CKQUORUM refused: " + e.reply()});
          continue;
        }
        answer = e.reply();
        if (verdicts.empty()) verdicts = where + ": " + answer;
      }
    } catch (const Error& e) {
      out.push_back({where, "sentinel", Level::kWarn,
                     std::string("not reachable (") + e.what() +
                         "): one sentinel fewer to agree on a failover"});
      continue;
    }
    out.push_back({where, "sentinel", Level::kOk,
                   "reachable; SENTINEL CKQUORUM " + sentinels.master_name + ": " + answer});
  }
  std::string counted = std::to_string(reachable + refused) + " of " +
                        std::to_string(sentinels.each.size()) + " sentinels reachable, " +
                        std::to_string(agreeing) + " report quorum and majority reachable";
  if (reachable > 0 && agreeing == reachable) {
    out.push_back({master, "quorum", Level::kOk, counted + ": a failover can be authorized"});
  } else if (reachable == 0 && refused > 0) {
    out.push_back({master, "quorum", Level::kUnknown,
                   counted + ": SENTINEL CKQUORUM refused to this user, quorum not checked"});
  } else if (agreeing > 0) {
    out.push_back({master, "quorum", Level::kWarn,
                   counted + ": the sentinels disagree (a partition?); " + verdicts});
  } else {
    out.push_back({master, "quorum", Level::kFail,
                   counted + (verdicts.empty() ? "" : " (" + verdicts + ")") +
                       ": if the master fails, no failover happens and every lock waits "
                       "until it is back"});
  }
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

// A quorum member's age as the restart rule reads it (read-only: nothing is written), with
// `server_info` its INFO server section.
redis::MemberAge member_age(redis::Topology& t, const Fields& server_info) {
  redis::MemberAge age;
  // As lua/quorum_member.lua reads them: digits only, anything else is none (0).
  auto read = [&](std::string_view key) {
    return redis::kept_ms(t.command({"GET", key}).str()).value_or(0);
  };
  age.longest_lease = read(redis::kLongestLeaseKey);
  age.first_write = read(redis::kFirstWriteKey);
  redis::Reply time = t.command({"TIME"});
  age.now = std::stoll(time.at(0).str()) * 1000 + std::stoll(time.at(1).str()) / 1000;
  age.uptime = redis::member_uptime(t.command({"GET", redis::kStartedKey}).str(),
                                    number(server_info, "uptime_in_seconds", 0) * 1000, age.now);
  return age;
}

// The quorum's restart rule, member by member: a member restarted without its data does
// not count towards a majority until the longest lease has passed.
void check_restarts(const std::vector<std::pair<std::string, redis::MemberAge>>& ages,
                    std::vector<Finding>& out) {
  long long longest = 0, first_use = 0;
  for (const auto& [server, age] : ages) {
    longest = std::max(longest, age.longest_lease);
    if (age.first_write > 0)
      first_use = first_use ? std::min(first_use, age.first_write) : age.first_write;
  }
  for (const auto& [server, age] : ages) {
    Millis wait = redis::not_counted_for(age, longest, first_use);
    if (wait.count() > 0) {
      out.push_back({server, "restart", Level::kWarn,
                     "restarted " + format_duration(Millis(age.uptime)) +
                         " ago without its data: not counted towards a majority for another " +
                         format_duration(wait) + " (the longest lease, " +
                         format_duration(Millis(longest)) + ", must pass first)"});
    } else {
      out.push_back({server, "restart", Level::kOk, "counts towards a majority"});
    }
  }
}

// The checks of one server (`t`: the standalone server, Sentinel's master, a cluster's
// master or a quorum's member; `topology`: the deployment it belongs to).
void examine_server(redis::Topology& topology, redis::Topology& t, const std::string& prefix,
                    std::vector<Finding>& out) {
  Checker c{t, t.server_name(), out, {}};
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
  ServerKind kind;
  guarded("version", [&] {
    cluster = number(info(t, "cluster"), "cluster_enabled", 0) == 1;
    kind = server_kind(info(t, "server"), info(t, "replication"));
    check_version(c, kind, cluster);
    check_compatibility(c, kind);
  });
  guarded("persistence", [&] { check_persistence(c, info(t, "persistence")); });
  guarded("eviction", [&] { check_eviction(c, info(t, "memory")); });
  guarded("timeout", [&] { check_timeout(c); });
  guarded("latency", [&] { check_latency(c); });
  guarded("clock", [&] { check_clock(c); });
  bool replicated = cluster || topology.replicated();
  guarded("replication", [&] { check_replication(c, info(t, "replication"), replicated); });
  guarded("min-replicas", [&] { check_min_replicas(c, info(t, "replication"), replicated); });
  if (cluster) {
    guarded("sharded-pubsub", [&] {
      if (kind.product.empty()) throw Error(kExitData, "INFO server was not read");
      check_sharded_pubsub(c, kind);
    });
    guarded("cluster", [&] { check_cluster(c); });
  }
  guarded("certificate", [&] { check_certificate(out, c.server, t.server_certificate_expiry()); });
  guarded("acl", [&] { check_acl(c, prefix, cluster); });
}

// Two members of a quorum URL that are one server under two names (an alias, a second
// address, a proxy): it counts twice, and a majority can be fewer servers than it says.
void check_distinct(const std::vector<std::pair<std::string, std::string>>& run_ids,
                    std::vector<Finding>& out) {
  for (size_t j = 0; j < run_ids.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (run_ids[j].second.empty() || run_ids[j].second != run_ids[i].second) continue;
      out.push_back({run_ids[j].first, "distinct", Level::kFail,
                     "the same server as " + run_ids[i].first + " (run_id " + run_ids[j].second +
                         "): it counts twice towards a majority; name each server once"});
      break;
    }
  }
}

std::vector<Finding> examine(redis::Topology& topology, const std::string& prefix) {
  std::vector<Finding> out;
  std::vector<std::pair<std::string, redis::MemberAge>> ages;
  std::vector<std::pair<std::string, std::string>> run_ids;  // member -> INFO's run_id
  const bool quorum = !topology.quorum_members().empty();
  size_t answered = 0, member = 0;
  const std::vector<std::string> silent = topology.silent_quorum_members();
  topology.for_each_master([&](redis::Topology& t) {
    if (!quorum) return examine_server(topology, t, prefix, out);
    // A quorum is meant to outlive a member: one that does not answer is a finding about
    // that member, and the others are still examined (those that did not answer the PING
    // sent to all at once are not waited for again, one after another).
    const std::string server = t.options().endpoint.describe();  // no I/O
    if (!silent[member++].empty()) {
      out.push_back({server, "reachable", Level::kFail, silent[member - 1]});
      return;
    }
    try {
      const Fields server_info = info(t, "server");
      ages.emplace_back(server, member_age(t, server_info));
      run_ids.emplace_back(server, field(server_info, "run_id"));
      examine_server(topology, t, prefix, out);
      ++answered;
    } catch (const UnavailableError& e) {
      if (ages.size() > answered) ages.pop_back();
      if (run_ids.size() > answered) run_ids.pop_back();
      out.push_back({server, "reachable", Level::kFail, e.what()});
    }
  });
  if (quorum) {
    const size_t members = topology.quorum_members().size(), majority = members / 2 + 1;
    std::string counted = std::to_string(answered) + " of " + std::to_string(members) +
                          " members answered (a majority is " + std::to_string(majority) + ")";
    if (answered == members) {
      out.push_back({"quorum", "members", Level::kOk, counted});
    } else if (answered >= majority) {
      out.push_back({"quorum", "members", Level::kWarn,
                     counted + ": locks are still taken, but one more member lost stops them"});
    } else {
      out.push_back({"quorum", "members", Level::kFail,
                     counted + ": no lock can be taken or renewed (exit 69)"});
    }
    check_restarts(ages, out);
    check_distinct(run_ids, out);
  }
  redis::Topology::Sentinels sentinels = topology.sentinels();
  if (!sentinels.each.empty()) check_sentinels(sentinels, topology.server_name(), out);
  return out;
}

}  // namespace rlock::doctor
