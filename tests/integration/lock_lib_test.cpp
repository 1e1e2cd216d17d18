// The lock primitive through the library (no CLI), against a real redis-server.
#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "exec/stop_policy.hpp"
#include "exec/supervisor.hpp"
#include "exec/watchdog.hpp"
#include "harness.hpp"
#include "lib_util.hpp"
#include "prim/lock.hpp"
#include "redis/connection.hpp"
#include "redis/subscriber.hpp"
#include "redis/url.hpp"
#include "util/error.hpp"

using namespace rlock;
using namespace rlock::test;

namespace {

using Fixture = LibFixture;

}  // namespace

TEST_CASE_FIXTURE(Fixture, "re-entry to depth 100 and back") {
  prim::Lock lock(conn, layout, "deep");
  long long fence = 0;
  for (int i = 1; i <= 100; ++i) {
    auto a = lock.try_acquire("me", Millis(30'000));
    REQUIRE(acquired(a));
    CHECK(held(a).count == i);
    if (i == 1) fence = held(a).fence;
    CHECK(held(a).fence == fence);  // re-entry never advances the token
  }
  CHECK(server.cmd_str({"HGET", "rlock:lock:{deep}", "me"}) == "100");
  CHECK_FALSE(acquired(lock.try_acquire("other", Millis(30'000))));
  for (int i = 99; i >= 1; --i) {
    auto r = lock.release("me");
    REQUIRE(released(r));
    CHECK(r.remaining == i);
  }
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{deep}"}) == 1);
  auto last = lock.release("me");
  CHECK(released(last));
  CHECK(last.remaining == 0);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{deep}"}) == 0);
}

TEST_CASE_FIXTURE(Fixture, "EVALSHA falls back to EVAL after SCRIPT FLUSH") {
  prim::Lock lock(conn, layout, "flushed");
  REQUIRE(acquired(lock.try_acquire("a", Millis(30'000))));
  CHECK(released(lock.release("a")));
  server.cmd({"SCRIPT", "FLUSH"});
  auto a = lock.try_acquire("a", Millis(30'000));
  CHECK(acquired(a));
  server.cmd({"SCRIPT", "FLUSH"});
  CHECK(lock.renew("a", Millis(30'000)).count() > 0);
  server.cmd({"SCRIPT", "FLUSH"});
  CHECK(lock.release("a").remaining == 0);
}

TEST_CASE_FIXTURE(Fixture, "fencing tokens never go backwards, also after FLUSHALL") {
  prim::Lock lock(conn, layout, "fenced");
  long long previous = 0;
  for (int round = 0; round < 3; ++round) {
    auto a = lock.try_acquire("o", Millis(30'000));
    REQUIRE(acquired(a));
    CHECK(held(a).fence > previous);
    previous = held(a).fence;
    lock.release("o");
    if (round == 1) server.cmd({"FLUSHALL"});
  }
  server.cmd({"SET", "rlock:lock:{fenced}:fence", "9000000000000000"});
  auto a = lock.try_acquire("o", Millis(30'000));
  CHECK(held(a).fence == 9000000000000001LL);
  CHECK(server.cmd_str({"GET", "rlock:lock:{fenced}:fence"}) == "9000000000000001");
}

TEST_CASE_FIXTURE(Fixture, "a waiter is woken by the release, long before the lease runs out") {
  redis::Topology holder_conn = topology_for(server);
  prim::Lock holder(holder_conn, layout, "handoff");
  REQUIRE(acquired(holder.try_acquire("holder", Millis(60'000))));
  std::thread releaser([&] {
    if (poll_until([&] { return subscribers(server, "rlock:chan:{handoff}:lock") == 1; }, 10s)) {
      holder.release("holder");
    }
  });
  prim::Lock waiter(conn, layout, "handoff");
  auto start = Clock::now();
  auto a = waiter.acquire("waiter", Millis(30'000), in(Millis(20'000)));
  releaser.join();
  CHECK(acquired(a));
  CHECK(ms_between(start) < 5'000);
}

TEST_CASE_FIXTURE(Fixture, "a waiter is woken when the holder's lease runs out, with no release") {
  prim::Lock lock(conn, layout, "expiring");
  REQUIRE(acquired(lock.try_acquire("gone", Millis(800))));
  auto start = Clock::now();
  auto a = lock.acquire("next", Millis(30'000), in(Millis(20'000)));
  CHECK(acquired(a));
  CHECK(ms_between(start) >= 500);
  CHECK(ms_between(start) < 5'000);
}

TEST_CASE_FIXTURE(
    Fixture, "a wait that runs out reports the holder; the socket timeout does not cut it short") {
  auto o = options_for(server);
  o.command_timeout = Millis(200);
  redis::Topology short_timeout(o);
  prim::Lock lock(short_timeout, layout, "busy");
  REQUIRE(acquired(lock.try_acquire("holder", Millis(60'000))));
  auto start = Clock::now();
  auto a = lock.acquire("waiter", Millis(30'000), in(Millis(700)));
  CHECK_FALSE(acquired(a));
  CHECK(ms_between(start) >= 650);
  REQUIRE(busy(a).holders.size() == 1);
  CHECK(busy(a).holders[0].owner == "holder");
  CHECK(busy(a).holders[0].count == 1);
  CHECK(busy(a).ttl.count() > 50'000);
}

TEST_CASE_FIXTURE(Fixture, "renew is refused once the lock is gone or taken over") {
  prim::Lock lock(conn, layout, "renewed");
  REQUIRE(acquired(lock.try_acquire("me", Millis(5'000))));
  CHECK(lock.renew("me", Millis(60'000)).count() > 0);
  CHECK(server.cmd_int({"PTTL", "rlock:lock:{renewed}"}) > 55'000);
  CHECK_FALSE(lock.renew("someone-else", Millis(60'000)).count() > 0);
  server.cmd({"DEL", "rlock:lock:{renewed}"});
  CHECK_FALSE(lock.renew("me", Millis(60'000)).count() > 0);
  server.cmd({"SET", "rlock:lock:{renewed}", "not a lock"});
  CHECK_FALSE(lock.renew("me", Millis(60'000)).count() > 0);
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
  REQUIRE(acquired(lock.try_acquire("me", Millis(30'000))));
  auto r = lock.release("me", Millis(5'000));
  CHECK(released(r));
  CHECK(r.remaining == 0);
  CHECK(server.cmd_str({"HGET", "rlock:lock:{kept}", "me"}) == "0");
  auto pttl = server.cmd_int({"PTTL", "rlock:lock:{kept}"});
  CHECK(pttl > 0);
  CHECK(pttl <= 5'000);
  CHECK_FALSE(acquired(lock.try_acquire("other", Millis(30'000))));
  CHECK(lock.release("me").remaining == 0);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{kept}"}) == 0);
}

TEST_CASE_FIXTURE(Fixture,
                  "a granted waiter's deadline runs from its claim, not from when it queued") {
  redis::Topology holder_conn = topology_for(server);
  prim::Lock holder(holder_conn, layout, "claimed");
  REQUIRE(acquired(holder.try_acquire("holder", Millis(60'000))));
  std::thread releaser([&] {
    if (poll_until(
            [&] {
              return server.cmd_int({"ZCARD", "rlock:lock:{claimed}:waiters"}) == 1;
            },
            10s)) {
      std::this_thread::sleep_for(1500ms);  // the wait is long compared with the lease
      holder.release("holder");
    }
  });
  prim::Lock waiter(conn, layout, "claimed");
  auto a = waiter.acquire("waiter", Millis(3'000), in(Millis(20'000)));
  const auto got_at = SteadyClock::now();
  releaser.join();
  auto h = held(a);
  CHECK(h.fresh);
  // Counted from the claim: nearly the whole 3s lease is left, not 3s minus the wait.
  CHECK(h.deadline - got_at > Millis(2'500));
  CHECK(h.deadline - got_at <= Millis(3'000));
}

TEST_CASE_FIXTURE(
    Fixture, "an acquisition repeated with the same request is idempotent; its clean-up frees it") {
  // A second attempt of the same request (a retry after a lost reply) must not re-enter.
  prim::Lock lock(conn, layout, "idem");
  auto first = lock.try_acquire("o", Millis(30'000), prim::HoldKind::kExec);
  auto h = held(first);
  CHECK(server.cmd_str({"GET", "rlock:lock:{idem}:exec"}) == h.hold_id);
  CHECK(server.cmd_str({"GET", "rlock:lock:{idem}:req:" + h.hold_id}) == "1");
  // A second exec of the same owner is refused while the first runs.
  auto second = lock.try_acquire("o", Millis(30'000), prim::HoldKind::kExec);
  CHECK(busy(second).same_owner_exec);
  // Releasing twice by the same hold: the second is a retry and still says released.
  CHECK(released(lock.release("o", Millis(0), h.hold_id)));
  CHECK(released(lock.release("o", Millis(0), h.hold_id)));
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{idem}"}) == 0);
}

TEST_CASE_FIXTURE(Fixture, "a job is never started once its hold's stop point has passed") {
  TempDir dir;
  const std::string marker = dir / "marker";
  prim::Lock lock(conn, layout, "late");
  const Millis lease(600);
  auto h = held(lock.try_acquire("o", lease, prim::HoldKind::kExec));
  // The process was paused between taking the lock and starting the job: by now the lease
  // may have run out on the server.
  std::this_thread::sleep_for(700ms);
  exec::SignalFd signals;
  exec::SuperviseOptions so;
  so.kill_after = Millis(100);
  so.margin = exec::stop_margin(lease);
  auto guardian = exec::Guardian::start(SIGTERM, so.kill_after, so.margin, "");
  exec::Watchdog watchdog(lock.hold("o", lease, h), conn);
  exec::JobSpec job;
  job.argv = {"touch", marker};
  job.signal_mask = &signals.original_mask();
  CHECK(exec::supervise(job, watchdog, signals, guardian, so) == kExitLockLost);
  CHECK_FALSE(std::filesystem::exists(marker));
}
