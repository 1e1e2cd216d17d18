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

namespace {

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

}  // namespace

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

}  // namespace rlock::doctor
