#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "doctor/doctor.hpp"
#include "doctor/server_info.hpp"
#include "redis/quorum_restart_rule.hpp"
#include "redis/topology.hpp"

// What doctor's checks share (doctor.cpp runs them): reading INFO and CONFIG, and where a
// server's findings go.
namespace rlock::doctor {

using Fields = InfoFields;

Fields info(redis::Topology& t, const std::string& section);
// CONFIG GET name, or nullopt when this user may not read it (managed services rename or
// forbid CONFIG): then `refusal` is the server's answer.
std::optional<std::string> config(redis::Topology& t, const std::string& name,
                                  std::string& refusal);
long long number(const Fields& f, const std::string& name, long long otherwise = -1);
std::string field(const Fields& f, const std::string& name);

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

// One server's settings (server_checks.cpp).
void check_version(Checker& c, const ServerKind& kind, bool cluster);
void check_compatibility(Checker& c, const ServerKind& kind);
void check_persistence(Checker& c, const Fields& persistence);
void check_eviction(Checker& c, const Fields& memory);
void check_timeout(Checker& c);
void check_latency(Checker& c);
void check_clock(Checker& c);
void check_sharded_pubsub(Checker& c, const ServerKind& kind);
void check_cluster(Checker& c);
using Expiry = std::optional<std::chrono::system_clock::time_point>;
void check_certificate(std::vector<Finding>& out, const std::string& server, const Expiry& until);

// Replicas and sentinels (replication_checks.cpp).
void check_replication(Checker& c, const Fields& replication, bool replicated_topology);
void check_min_replicas(Checker& c, const Fields& replication, bool replicated_topology);
void check_sentinels(const redis::Topology::Sentinels& sentinels, const std::string& master,
                     std::vector<Finding>& out);

// The ACL rights rlock(1) lists (acl_check.cpp).
void check_acl(Checker& c, const std::string& prefix, bool cluster);

// A quorum's members (quorum_checks.cpp).
redis::MemberAge member_age(redis::Topology& t, const Fields& server_info);
void check_restarts(const std::vector<std::pair<std::string, redis::MemberAge>>& ages,
                    std::vector<Finding>& out);
void check_distinct(const std::vector<std::pair<std::string, std::string>>& run_ids,
                    std::vector<Finding>& out);

}  // namespace rlock::doctor
