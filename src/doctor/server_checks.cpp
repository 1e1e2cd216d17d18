#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "doctor/checks.hpp"
#include "redis/errors.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::doctor {

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

}  // namespace rlock::doctor
