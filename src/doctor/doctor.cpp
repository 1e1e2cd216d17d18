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

namespace {

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

}  // namespace

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
