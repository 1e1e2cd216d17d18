// Helpers for tests that use the library directly (no CLI).
#pragma once

#include <doctest/doctest.h>

#include <csignal>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "harness.hpp"
#include "prim/key_layout.hpp"
#include "prim/lock.hpp"
#include "redis/topology.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"

namespace rlock::test {

inline redis::ConnectOptions options_for(const RedisServer& server) {
  redis::ConnectOptions o;
  o.endpoint = redis::parse_url(server.url());
  return o;
}

// A topology for `server` as RLOCK_TEST_TOPOLOGY names it (RedisServer::topology_url).
inline redis::Topology topology_for(const RedisServer& server) {
  return redis::Topology(redis::parse_target(server.topology_url()), options_for(server));
}

// A server of its own, one connection to it and the default key layout.
struct LibFixture {
  RedisServer server;
  redis::Topology conn{topology_for(server)};
  prim::KeyLayout layout;
};

// A deadline `d` from now.
inline Deadline in(Millis d) { return SteadyClock::now() + d; }

inline bool acquired(const prim::Acquisition& a) { return std::holds_alternative<prim::Held>(a); }

// The Held of an acquisition that must have succeeded.
inline prim::Held held(const prim::Acquisition& a) {
  REQUIRE(acquired(a));
  return std::get<prim::Held>(a);
}

// The Busy of an acquisition that must have failed.
inline prim::Busy busy(const prim::Acquisition& a) {
  REQUIRE_FALSE(acquired(a));
  return std::get<prim::Busy>(a);
}

inline bool released(const prim::Release& r) {
  return r.outcome == prim::Release::Outcome::kReleased;
}

// The grant channels of the waiters queued in `waiters_key`, in queue order: `channel`,
// ':' and the wait id, field `id_field` (from 0) of a ':'-separated member (2 for a lock's
// "<lease>:<kind>:<wait id>:<owner>", 1 for a semaphore's "<count>:<wait id>:<owner>").
inline std::vector<std::string> grant_channels(const RedisServer& server,
                                               const std::string& waiters_key,
                                               const std::string& channel, int id_field) {
  std::vector<std::string> out;
  for (const std::string& m : server.cmd({"ZRANGE", waiters_key, "0", "-1"})) {
    std::stringstream fields(m);
    std::string id;
    for (int i = 0; i <= id_field; ++i) std::getline(fields, id, ':');
    out.push_back(channel + ":" + id);
  }
  return out;
}

// What each of `channels` heard (its distinct messages) while `act` ran: subscribed before
// it, and read up to a marker published on each channel after it (a server delivers in
// publish order), so that no sleep decides when it is over. Channels that heard nothing
// are left out.
using Heard = std::map<std::string, std::set<std::string>>;
inline Heard heard_during(const RedisServer& server, const std::vector<std::string>& channels,
                          const std::function<void()>& act) {
  const std::string marker = "test-marker";
  redis::Topology topology = topology_for(server);
  redis::Subscriber sub = topology.subscribe(channels);
  act();
  for (const std::string& c : channels) server.cmd({"SPUBLISH", c, marker});
  Heard heard;
  size_t marks = 0;
  const size_t want = channels.size() * server.members().size();  // a quorum's: each member's
  const Deadline until = in(Millis(10'000));
  while (marks < want) {
    redis::Subscriber::Event e = sub.wait(until);
    REQUIRE(e.wake != redis::Subscriber::Wake::kTimeout);
    if (e.wake != redis::Subscriber::Wake::kMessage) continue;
    if (e.payload == marker) {
      ++marks;
    } else {
      heard[e.channel].insert(e.payload);
    }
  }
  return heard;
}

// heard_during for a release that hands something to `waiters` (rlock processes): they are
// stopped (SIGSTOP) from before `act` until what was heard is read, and the markers wait
// until `settled` holds on every member. A quorum's members apply a release one after the
// other: a waiter granted by the first would otherwise claim while the others still hold,
// give back its minority grant and so hand the lock to the waiter behind it there, a
// wake-up that is the split's, not the hand-off's.
inline Heard heard_during_paused(const RedisServer& server,
                                 const std::vector<std::string>& channels,
                                 std::vector<Spawned>& waiters, const std::function<void()>& act,
                                 const std::function<bool(const RedisServer&)>& settled) {
  for (Spawned& w : waiters) w.kill(SIGSTOP);
  Heard heard = heard_during(server, channels, [&] {
    act();
    for (const RedisServer* m : server.members())
      REQUIRE(poll_until([&] { return settled(*m); }, std::chrono::seconds(10)));
  });
  for (Spawned& w : waiters) w.kill(SIGCONT);
  return heard;
}

}  // namespace rlock::test

// Failure output: the channels and what they heard.
template <>
struct doctest::StringMaker<rlock::test::Heard> {
  static doctest::String convert(const rlock::test::Heard& heard) {
    return rlock::test::json(heard).dump().c_str();
  }
};
