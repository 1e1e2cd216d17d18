// Helpers for tests that use the library directly (no CLI).
#pragma once

#include <doctest/doctest.h>

#include <variant>

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

}  // namespace rlock::test
