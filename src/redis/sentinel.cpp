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

Endpoint SentinelResolver::ask(const Endpoint& sentinel, const ConnectOptions& options) {
  ConnectOptions o = options;
  o.endpoint = sentinel;
  o.endpoint.user = target_.sentinel_user;
  o.endpoint.password = target_.sentinel_password;
  o.endpoint.db = 0;  // a sentinel has no databases
  if (sentinel_ &&
      (sentinel_->broken() || sentinel_->options().endpoint.describe() != o.endpoint.describe())) {
    sentinel_.reset();
  }
  if (!sentinel_) sentinel_.emplace(Connection::open(o));
  sentinel_->set_timeout(o.command_timeout);
  ReplyPtr reply = sentinel_->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", target_.master_name});
  ReplyView address(reply.get());
  if (address.is_nil() || !address.is_array() || address.size() != 2) {
    throw UnavailableError("does not monitor a master named '" + target_.master_name + "'");
  }
  long long port = address.at(1).integer();
  if (port <= 0 || port > 65535) throw DataError("named a master with port out of range");
  return target_.endpoint.at(address.at(0).str(), static_cast<int>(port));
}

namespace {

// `options` with both timeouts at most `share` (and at least 1 ms).
ConnectOptions within(ConnectOptions options, Millis share) {
  share = std::max(share, Millis(1));
  options.connect_timeout = std::min(options.connect_timeout, share);
  options.command_timeout = std::min(options.command_timeout, share);
  return options;
}

// An equal share of what is left until `until` for the `i`th of `n` to be asked.
Millis share_of(Deadline until, size_t i, size_t n) {
  return millis_until(until) / static_cast<long long>(n - i);
}

}  // namespace

void SentinelResolver::prefer(size_t i) {
  std::vector<Endpoint>& sentinels = target_.seeds;
  std::rotate(sentinels.begin(), sentinels.begin() + static_cast<long>(i),
              sentinels.begin() + static_cast<long>(i) + 1);
}

Connection SentinelResolver::connect_master_once(Deadline until) {
  std::string failures;
  auto note = [&failures](const std::string& what) {
    if (!failures.empty()) failures += "; ";
    failures += what;
  };
  std::vector<std::string> silent;  // addresses that did not answer ROLE in this pass
  const std::vector<Endpoint>& sentinels = target_.seeds;
  for (size_t i = 0; i < sentinels.size(); ++i) {
    std::string who = "sentinel " + sentinels[i].describe();
    if (millis_until(until).count() <= 0) {
      note(who + ": not asked, no time left (--timeout)");
      continue;
    }
    Deadline slot_end = SteadyClock::now() + share_of(until, i, sentinels.size());
    Endpoint candidate;
    try {
      candidate = ask(sentinels[i], within(options_, millis_until(slot_end)));
    } catch (const Error& e) {
      note(who + ": " + e.what());
      continue;
    }
    if (std::find(silent.begin(), silent.end(), candidate.describe()) != silent.end()) {
      note(who + " named " + candidate.describe() + " too");
      continue;
    }
    try {
      ConnectOptions o = within(options_, millis_until(slot_end));
      o.endpoint = candidate;
      Connection conn = Connection::open(o);
      if (role_of(conn) != Role::kMaster) {
        note(who + " named " + candidate.describe() + ", which is not a master (yet)");
        continue;
      }
      master_ = candidate;
      prefer(i);
      return conn;
    } catch (const Error& e) {
      note(who + " named " + candidate.describe() + ": " + e.what());
      silent.push_back(candidate.describe());
    }
  }
  throw UnavailableError("no sentinel led to the master '" + target_.master_name +
                         "': " + failures);
}

Endpoint SentinelResolver::named_master(Deadline until) {
  std::string failures;
  const std::vector<Endpoint>& sentinels = target_.seeds;
  for (size_t i = 0; i < sentinels.size(); ++i) {
    try {
      if (millis_until(until).count() <= 0) throw UnavailableError("not asked, no time left");
      Endpoint named = ask(sentinels[i], within(options_, share_of(until, i, sentinels.size())));
      prefer(i);
      return named;
    } catch (const Error& e) {
      if (!failures.empty()) failures += "; ";
      failures += "sentinel " + sentinels[i].describe() + ": " + e.what();
    }
  }
  throw UnavailableError("no sentinel named the master '" + target_.master_name + "': " + failures);
}

Connection SentinelResolver::connect_master(Deadline until) {
  while (true) {
    try {
      return connect_master_once(until);
    } catch (const UnavailableError&) {
      if (SteadyClock::now() + kPassPause >= until) throw;
    }
    std::this_thread::sleep_for(kPassPause);
  }
}

}  // namespace rlock::redis
