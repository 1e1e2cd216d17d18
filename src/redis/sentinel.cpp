#include "redis/sentinel.hpp"

#include <algorithm>
#include <thread>

#include "redis/errors.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// Between passes during a failover: short against the sentinels' own pace (a failover
// takes about a second), long enough not to hammer them.
constexpr Millis kPassPause{100};

}  // namespace

Role role_of(Connection& conn) {
  ReplyPtr reply = conn.command({"ROLE"});
  ReplyView role(reply.get());
  if (!role.is_array() || role.size() == 0) return Role::kUnknown;
  std::string name = role.at(0).str();
  if (name == "master") return Role::kMaster;
  if (name == "slave" || name == "replica") return Role::kReplica;
  if (name == "sentinel") return Role::kSentinel;
  return Role::kUnknown;
}

SentinelResolver::SentinelResolver(Target target, const ConnectOptions& options)
    : target_(std::move(target)), options_(options) {}

Endpoint SentinelResolver::ask(const Endpoint& sentinel) {
  ConnectOptions o = options_;
  o.endpoint = sentinel;
  o.endpoint.user = target_.sentinel_user;
  o.endpoint.password = target_.sentinel_password;
  o.endpoint.db = 0;  // a sentinel has no databases
  Connection conn = Connection::open(o);
  ReplyPtr reply = conn.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", target_.master_name});
  ReplyView address(reply.get());
  if (address.is_nil() || !address.is_array() || address.size() != 2) {
    throw UnavailableError("does not monitor a master named '" + target_.master_name + "'");
  }
  long long port = address.at(1).integer();
  if (port <= 0 || port > 65535) throw DataError("named a master with port out of range");
  return target_.endpoint.at(address.at(0).str(), static_cast<int>(port));
}

Connection SentinelResolver::connect_master() {
  std::string failures;
  auto note = [&failures](const std::string& what) {
    if (!failures.empty()) failures += "; ";
    failures += what;
  };
  std::vector<Endpoint>& sentinels = target_.seeds;
  for (size_t i = 0; i < sentinels.size(); ++i) {
    std::string who = "sentinel " + sentinels[i].describe();
    Endpoint candidate;
    try {
      candidate = ask(sentinels[i]);
    } catch (const Error& e) {
      note(who + ": " + e.what());
      continue;
    }
    try {
      ConnectOptions o = options_;
      o.endpoint = candidate;
      Connection conn = Connection::open(o);
      if (role_of(conn) != Role::kMaster) {
        note(who + " named " + candidate.describe() + ", which is not a master (yet)");
        continue;
      }
      master_ = candidate;
      // Ask the one that knew first next time.
      std::rotate(sentinels.begin(), sentinels.begin() + static_cast<long>(i),
                  sentinels.begin() + static_cast<long>(i) + 1);
      return conn;
    } catch (const Error& e) {
      note(who + " named " + candidate.describe() + ": " + e.what());
    }
  }
  throw UnavailableError("no sentinel led to the master '" + target_.master_name +
                         "': " + failures);
}

Connection SentinelResolver::connect_master(Deadline until) {
  while (true) {
    try {
      return connect_master();
    } catch (const UnavailableError&) {
      if (SteadyClock::now() + kPassPause >= until) throw;
    }
    std::this_thread::sleep_for(kPassPause);
  }
}

}  // namespace rlock::redis
