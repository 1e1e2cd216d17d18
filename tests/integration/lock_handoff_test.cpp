// Handoff: a release gives the lock straight to the longest-waiting live waiter.
#include <doctest/doctest.h>
#include <signal.h>

#include <future>

#include "harness.hpp"
#include "lib_util.hpp"
#include "prim/lock.hpp"
#include "redis/connection.hpp"
#include "redis/url.hpp"
#include "util/error.hpp"

namespace t = rlock::test;
using rlock::Deadline;
using rlock::Millis;
using rlock::SteadyClock;
using rlock::test::acquired;
using rlock::test::busy;
using rlock::test::held;
using namespace std::chrono_literals;

namespace {

constexpr const char* kKey = "rlock:lock:{baton}";
constexpr const char* kQueue = "rlock:lock:{baton}:waiters";
constexpr const char* kChannel = "rlock:chan:{baton}:lock";

// A waiter on its own connection and thread, as a separate process would be.
std::future<rlock::prim::Acquisition> start_waiter(const t::RedisServer& server,
                                                   std::string owner) {
  return std::async(std::launch::async, [&server, owner] {
    rlock::redis::Topology conn = t::topology_for(server);
    rlock::prim::KeyLayout layout;
    rlock::prim::Lock lock(conn, layout, "baton");
    return lock.acquire(owner, Millis(30'000), SteadyClock::now() + Millis(20'000));
  });
}

// Queued on every member (a quorum's included), and listening there.
bool queued(const t::RedisServer& server, long long n) {
  return t::poll_until([&] { return t::live_waiters(server, "baton") == n; }, 10s);
}

// A server of its own, and the lock "baton" on one connection to it.
struct Baton {
  t::RedisServer server;
  rlock::redis::Topology conn{t::topology_for(server)};
  rlock::prim::KeyLayout layout;
  rlock::prim::Lock lock{conn, layout, "baton"};
};

}  // namespace

TEST_CASE_FIXTURE(Baton, "a release hands the lock to the waiter before the waiter does anything") {
  auto& holder = lock;
  auto first = holder.try_acquire("holder", Millis(60'000));
  REQUIRE(acquired(first));
  auto waiter = start_waiter(server, "waiter");
  REQUIRE(queued(server, 1));
  CHECK(holder.release("holder").remaining == 0);
  // Same instant, no reply from the waiter needed: it already holds the lock, on each
  // member whose release answered (a quorum's majority; a third member may still be
  // running it).
  size_t handed = 0;
  for (const t::RedisServer* m : server.members()) {
    if (m->cmd_str({"HGET", kKey, "waiter"}) == "1" && m->cmd_int({"HLEN", kKey}) == 1 &&
        m->cmd_int({"ZCARD", kQueue}) == 0)
      ++handed;
  }
  CHECK(handed >= server.members().size() / 2 + 1);
  auto a = waiter.get();
  CHECK(acquired(a));
  CHECK(held(a).count == 1);
  CHECK(held(a).fence > held(first).fence);
  // The token is written back to a majority (a member that answered late may have a later
  // token of its own: the next holder's, drawn from a majority, is later still).
  size_t at_token = 0;
  for (const t::RedisServer* m : server.members()) {
    if (m->cmd_str({"GET", "rlock:lock:{baton}:fence"}) == std::to_string(held(a).fence))
      ++at_token;
  }
  CHECK(at_token >= server.members().size() / 2 + 1);
  // The lease left when the claim's reply was made: the grant's 30 s, less the
  // millisecond that may have passed since the release.
  CHECK(held(a).lease <= Millis(30'000));
  CHECK(held(a).lease >= Millis(29'000));
  CHECK(server.cmd_int({"PTTL", kKey}) > 25'000);
}

TEST_CASE_FIXTURE(Baton, "waiters get the lock in arrival order") {
  REQUIRE(acquired(lock.try_acquire("holder", Millis(60'000))));
  auto w1 = start_waiter(server, "w1");
  REQUIRE(queued(server, 1));
  auto w2 = start_waiter(server, "w2");
  REQUIRE(queued(server, 2));
  lock.release("holder");
  // On a majority: a quorum member whose claim or release came late may hand itself to
  // the next waiter (a minority; see on_majority).
  CHECK(acquired(w1.get()));
  CHECK(server.on_majority({"HEXISTS", kKey, "w1"}) == 1);
  CHECK(server.on_majority({"ZCARD", kQueue}) == 1);
  lock.release("w1");
  CHECK(acquired(w2.get()));
  CHECK(server.on_majority({"HEXISTS", kKey, "w2"}) == 1);
  CHECK(server.on_majority({"EXISTS", kQueue}) == 0);
}

TEST_CASE("a waiter that died is skipped: the lock is never handed to the dead") {
  t::RedisServer server;
  REQUIRE(t::rlock(server, {"lock", "baton", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto dead = t::spawn_rlock(server, {"lock", "baton", "--owner", "dead", "--wait", "60s"});
  REQUIRE(queued(server, 1));
  dead.kill(SIGKILL);
  REQUIRE(dead.wait(t::deadline(10s)).has_value());
  REQUIRE(t::poll_until([&] { return t::subscribers(server, kChannel) == 0; }, 10s));
  CHECK(server.cmd_int({"ZCARD", kQueue}) == 1);  // its entry outlived it

  auto r = t::rlock(server, {"unlock", "baton", "--owner", "holder"});
  CHECK(r.status == 0);
  CHECK(server.cmd_int({"EXISTS", kKey}) == 0);
  CHECK(server.cmd_int({"EXISTS", kQueue}) == 0);
}

TEST_CASE("a wait that runs out or is interrupted leaves the queue") {
  t::RedisServer server;
  REQUIRE(t::rlock(server, {"lock", "baton", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto r = t::rlock(server, {"lock", "baton", "--owner", "late", "--wait", "300ms"});
  CHECK(r.status == 75);
  CHECK(server.cmd_int({"EXISTS", kQueue}) == 0);

  auto waiting = t::spawn_rlock(server, {"exec", "--wait", "60s", "baton", "--", "true"});
  REQUIRE(queued(server, 1));
  waiting.kill(SIGTERM);
  CHECK(waiting.wait(t::deadline(10s)) == std::optional<int>(143));
  CHECK(server.cmd_int({"EXISTS", kQueue}) == 0);
  CHECK(t::hash_of(server, kKey) == t::json{{"holder", "1"}});
}

TEST_CASE_FIXTURE(Baton, "two waits by one owner get a grant each, one after the other") {
  REQUIRE(acquired(lock.try_acquire("holder", Millis(60'000))));
  auto first = start_waiter(server, "shared");
  REQUIRE(queued(server, 1));
  auto second = start_waiter(server, "shared");
  REQUIRE(queued(server, 2));
  lock.release("holder");
  auto a = first.get();
  CHECK(acquired(a));
  CHECK(server.on_majority({"ZCARD", kQueue}) == 1);  // the second still waits its turn
  CHECK(lock.release("shared").remaining == 0);
  auto b = second.get();
  CHECK(acquired(b));
  CHECK(held(b).fence > held(a).fence);
  CHECK(server.on_majority({"HGET", kKey, "shared"}) == 1);  // its own hold, not a re-entry
}

TEST_CASE_FIXTURE(Baton, "a release with a malformed neighbour key changes nothing") {
  REQUIRE(acquired(lock.try_acquire("holder", Millis(60'000))));
  server.cmd({"DEL", "rlock:lock:{baton}:fence"});
  server.cmd({"RPUSH", "rlock:lock:{baton}:fence", "x"});
  CHECK_THROWS_AS(lock.release("holder"), rlock::DataError);
  CHECK(server.cmd_str({"HGET", kKey, "holder"}) == "1");
  server.cmd({"DEL", "rlock:lock:{baton}:fence"});
  server.cmd({"SET", kQueue, "x"});
  CHECK_THROWS_AS(lock.release("holder"), rlock::DataError);
  CHECK(server.cmd_str({"HGET", kKey, "holder"}) == "1");
  CHECK(server.cmd_str({"GET", kQueue}) == "x");
}

// Every waiter behind the head sleeps until the holder's expiry it saw: only the head (its
// grant) and the waiter next in line (to look again when the grant's claim window ends, in
// case the head never claims) hear from a release, not the whole queue.
TEST_CASE_FIXTURE(Baton, "a hand-off wakes the head and the next waiter, not the whole queue") {
  REQUIRE(acquired(lock.try_acquire("holder", Millis(60'000))));
  constexpr long long kWaiters = 12;
  std::vector<t::Spawned> waiters;
  // One at a time, so that every quorum member has them in the same order.
  for (long long i = 0; i < kWaiters; ++i) {
    waiters.push_back(t::spawn_rlock(
        server, {"lock", "baton", "--owner", "w" + std::to_string(i), "--wait", "60s"}));
    REQUIRE(queued(server, i + 1));
  }
  const auto grants = t::grant_channels(server, kQueue, kChannel, 2);
  REQUIRE(grants.size() == kWaiters);
  auto channels = grants;
  channels.push_back(kChannel);
  const t::Heard heard = t::heard_during_paused(
      server, channels, waiters, [&] { lock.release("holder"); },
      [](const t::RedisServer& m) {
        return m.cmd_int({"HEXISTS", kKey, "holder"}) == 0;
      });
  CHECK(heard == t::Heard{{grants[0], {"grant"}}, {grants[1], {"changed 2000"}}});
}

// A --min-hold keep ends with no release: the head looks again when it runs out, and the
// waiter behind it too (the head may be stopped); nobody else.
TEST_CASE_FIXTURE(Baton, "a release that keeps the lock (--min-hold) wakes the head and the next") {
  REQUIRE(acquired(lock.try_acquire("holder", Millis(60'000))));
  std::vector<t::Spawned> waiters;
  for (int i = 0; i < 5; ++i) {
    waiters.push_back(t::spawn_rlock(
        server, {"lock", "baton", "--owner", "w" + std::to_string(i), "--wait", "60s"}));
  }
  REQUIRE(queued(server, 5));
  const auto grants = t::grant_channels(server, kQueue, kChannel, 2);
  auto channels = grants;
  channels.push_back(kChannel);
  const t::Heard heard = t::heard_during_paused(
      server, channels, waiters, [&] { lock.release("holder", Millis(5'000)); },
      [](const t::RedisServer& m) {
        return m.cmd_int({"PTTL", kKey}) <= 5'000;
      });
  CHECK(heard == t::Heard{{grants[0], {"changed 5000"}}, {grants[1], {"changed 5000"}}});
}
