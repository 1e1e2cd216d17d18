// The lock primitive through the library (no CLI), against a real redis-server.
#include <doctest/doctest.h>

#include <thread>

#include "harness.hpp"
#include "prim/lock.hpp"
#include "redis/connection.hpp"
#include "redis/subscriber.hpp"
#include "redis/url.hpp"
#include "util/error.hpp"

using namespace rlock;
using namespace rlock::test;

namespace {

redis::ConnectOptions options_for(const RedisServer& server) {
  redis::ConnectOptions o;
  o.endpoint = redis::parse_url(server.url());
  return o;
}

Deadline in(Millis d) { return SteadyClock::now() + d; }

// A server of its own, one connection to it and the default key layout.
struct Fixture {
  RedisServer server;
  redis::Connection conn = redis::Connection::open(options_for(server));
  prim::KeyLayout layout;
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "re-entry to depth 100 and back") {
  prim::Lock lock(conn, layout, "deep");
  long long fence = 0;
  for (int i = 1; i <= 100; ++i) {
    auto a = lock.try_acquire("me", Millis(30'000));
    REQUIRE(a.acquired);
    CHECK(a.count == i);
    if (i == 1) fence = a.fence;
    CHECK(a.fence == fence);  // re-entry never advances the token
  }
  CHECK(server.cmd_str({"HGET", "rlock:lock:{deep}", "me"}) == "100");
  CHECK_FALSE(lock.try_acquire("other", Millis(30'000)).acquired);
  for (int i = 99; i >= 1; --i) {
    auto r = lock.release("me");
    REQUIRE(r.held);
    CHECK(r.remaining == i);
  }
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{deep}"}) == 1);
  auto last = lock.release("me");
  CHECK(last.held);
  CHECK(last.remaining == 0);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{deep}"}) == 0);
}

TEST_CASE_FIXTURE(Fixture, "EVALSHA falls back to EVAL after SCRIPT FLUSH") {
  prim::Lock lock(conn, layout, "flushed");
  REQUIRE(lock.try_acquire("a", Millis(30'000)).acquired);
  CHECK(lock.release("a").held);
  server.cmd({"SCRIPT", "FLUSH"});
  auto a = lock.try_acquire("a", Millis(30'000));
  CHECK(a.acquired);
  server.cmd({"SCRIPT", "FLUSH"});
  CHECK(lock.renew("a", Millis(30'000)));
  server.cmd({"SCRIPT", "FLUSH"});
  CHECK(lock.release("a").remaining == 0);
}

TEST_CASE_FIXTURE(Fixture, "fencing tokens never go backwards, also after FLUSHALL") {
  prim::Lock lock(conn, layout, "fenced");
  long long previous = 0;
  for (int round = 0; round < 3; ++round) {
    auto a = lock.try_acquire("o", Millis(30'000));
    REQUIRE(a.acquired);
    CHECK(a.fence > previous);
    previous = a.fence;
    lock.release("o");
    if (round == 1) server.cmd({"FLUSHALL"});
  }
  server.cmd({"SET", "rlock:lock:{fenced}:fence", "9000000000000000"});
  auto a = lock.try_acquire("o", Millis(30'000));
  CHECK(a.fence == 9000000000000001LL);
  CHECK(server.cmd_str({"GET", "rlock:lock:{fenced}:fence"}) == "9000000000000001");
}

TEST_CASE_FIXTURE(Fixture, "a waiter is woken by the release, long before the lease runs out") {
  auto holder_conn = redis::Connection::open(options_for(server));
  prim::Lock holder(holder_conn, layout, "handoff");
  REQUIRE(holder.try_acquire("holder", Millis(60'000)).acquired);
  std::thread releaser([&] {
    if (poll_until([&] { return subscribers(server, "rlock:chan:{handoff}:lock") == 1; }, 10s)) {
      holder.release("holder");
    }
  });
  prim::Lock waiter(conn, layout, "handoff");
  auto start = Clock::now();
  auto a = waiter.acquire("waiter", Millis(30'000), in(Millis(20'000)));
  releaser.join();
  CHECK(a.acquired);
  CHECK(ms_between(start) < 5'000);
}

TEST_CASE_FIXTURE(Fixture, "a waiter is woken when the holder's lease runs out, with no release") {
  prim::Lock lock(conn, layout, "expiring");
  REQUIRE(lock.try_acquire("gone", Millis(800)).acquired);
  auto start = Clock::now();
  auto a = lock.acquire("next", Millis(30'000), in(Millis(20'000)));
  CHECK(a.acquired);
  CHECK(ms_between(start) >= 500);
  CHECK(ms_between(start) < 5'000);
}

TEST_CASE_FIXTURE(Fixture, "a wait that runs out reports the holder; the socket timeout does not cut it short") {
  auto o = options_for(server);
  o.command_timeout = Millis(200);
  auto short_timeout = redis::Connection::open(o);
  prim::Lock lock(short_timeout, layout, "busy");
  REQUIRE(lock.try_acquire("holder", Millis(60'000)).acquired);
  auto start = Clock::now();
  auto a = lock.acquire("waiter", Millis(30'000), in(Millis(700)));
  CHECK_FALSE(a.acquired);
  CHECK(ms_between(start) >= 650);
  REQUIRE(a.holders.size() == 1);
  CHECK(a.holders[0].owner == "holder");
  CHECK(a.holders[0].count == 1);
  CHECK(a.ttl.count() > 50'000);
}

TEST_CASE_FIXTURE(Fixture, "renew is refused once the lock is gone or taken over") {
  prim::Lock lock(conn, layout, "renewed");
  REQUIRE(lock.try_acquire("me", Millis(5'000)).acquired);
  CHECK(lock.renew("me", Millis(60'000)));
  CHECK(server.cmd_int({"PTTL", "rlock:lock:{renewed}"}) > 55'000);
  CHECK_FALSE(lock.renew("someone-else", Millis(60'000)));
  server.cmd({"DEL", "rlock:lock:{renewed}"});
  CHECK_FALSE(lock.renew("me", Millis(60'000)));
  server.cmd({"SET", "rlock:lock:{renewed}", "not a lock"});
  CHECK_FALSE(lock.renew("me", Millis(60'000)));
  CHECK(server.cmd_str({"GET", "rlock:lock:{renewed}"}) == "not a lock");
}

TEST_CASE_FIXTURE(Fixture, "keys of another type are reported, never overwritten") {
  prim::Lock lock(conn, layout, "typed");
  server.cmd({"SET", "rlock:lock:{typed}", "precious"});
  for (int op = 0; op < 3; ++op) {
    CAPTURE(op);
    try {
      if (op == 0) lock.try_acquire("me", Millis(1'000));
      if (op == 1) lock.release("me");
      if (op == 2) lock.force_release();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitData);
      CHECK(std::string(e.what()).find("holds a string, not a lock") != std::string::npos);
    }
  }
  CHECK(server.cmd_str({"GET", "rlock:lock:{typed}"}) == "precious");
  server.cmd({"DEL", "rlock:lock:{typed}"});
  server.cmd({"LPUSH", "rlock:lock:{typed}:fence", "x"});
  CHECK_THROWS_AS(lock.try_acquire("me", Millis(1'000)), DataError);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{typed}"}) == 0);
  server.cmd({"DEL", "rlock:lock:{typed}:fence"});
  server.cmd({"SET", "rlock:lock:{typed}:fence", "garbage"});
  CHECK_THROWS_AS(lock.try_acquire("me", Millis(1'000)), DataError);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{typed}"}) == 0);
}

TEST_CASE_FIXTURE(Fixture, "min-hold keeps the lock (count 0) and an explicit unlock ends it") {
  prim::Lock lock(conn, layout, "kept");
  REQUIRE(lock.try_acquire("me", Millis(30'000)).acquired);
  auto r = lock.release("me", Millis(5'000));
  CHECK(r.held);
  CHECK(r.remaining == 0);
  CHECK(server.cmd_str({"HGET", "rlock:lock:{kept}", "me"}) == "0");
  auto pttl = server.cmd_int({"PTTL", "rlock:lock:{kept}"});
  CHECK(pttl > 0);
  CHECK(pttl <= 5'000);
  CHECK_FALSE(lock.try_acquire("other", Millis(30'000)).acquired);
  CHECK(lock.release("me").remaining == 0);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{kept}"}) == 0);
}
