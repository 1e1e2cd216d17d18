// Strict FIFO: queued waiters get the lock in arrival order after a release, a lease
// expiry and a forced unlock; a dead waiter is skipped at once, a stopped one within the
// claim window.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <sstream>

#include "harness.hpp"

namespace rlock::test {
namespace {

enum class Freed { kReleased, kExpired, kForced };

// The waiters every member has queued and can hand the lock to: a quorum's members each
// grant in their own order of arrival, the same on all of them once each has the waiter
// (and its subscription) before the next comes.
long long queued(const RedisServer& redis) { return live_waiters(redis, "fifo"); }

// Starts `n` waiters one after the other (each queued before the next starts, at least
// 50 ms apart); each appends its number to `order` when it gets the lock.
std::vector<Spawned> start_waiters(const RedisServer& redis, const std::string& order, int n) {
  std::vector<Spawned> waiters;
  for (int i = 0; i < n; ++i) {
    const auto started = Clock::now();
    waiters.push_back(spawn_rlock(redis, {"exec", "--wait", "60s", "fifo", "--", "sh", "-c",
                                          "echo " + std::to_string(i) + " >> " + order}));
    REQUIRE(poll_until([&] { return queued(redis) == i + 1; }, 10s, 2ms));
    while (Clock::now() - started < 50ms) poll_until([] { return false; }, 5ms, 5ms);
  }
  return waiters;
}

std::vector<int> read_order(const std::string& path) {
  std::vector<int> out;
  std::istringstream in(read_file(path));
  for (int v; in >> v;) out.push_back(v);
  return out;
}

std::vector<int> iota(int n, int skip = -1) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    if (i != skip) out.push_back(i);
  }
  return out;
}

void run_fifo(Freed how) {
  RedisServer redis;
  for (int run = 0; run < 10; ++run) {
    CAPTURE(run);
    TempDir dir;
    const std::string order = dir / "order";
    write_file(order, "");
    std::optional<Spawned> holder;
    if (how == Freed::kExpired) {
      // A holder that dies: its lease (1s) frees the lock, with nobody releasing it.
      holder.emplace(spawn_rlock(
          redis, {"exec", "--lease", "1s", "fifo", "--", "sh", "-c", "echo in; exec sleep 60"}));
      REQUIRE(holder->read_line(deadline(10s)) == std::optional<std::string>("in"));
    } else {
      REQUIRE(rlock(redis, {"lock", "fifo", "--owner", "holder", "--lease", "60s"}).status == 0);
    }
    auto waiters = start_waiters(redis, order, 16);
    if (how == Freed::kReleased)
      REQUIRE(rlock(redis, {"unlock", "fifo", "--owner", "holder"}).status == 0);
    if (how == Freed::kForced) REQUIRE(rlock(redis, {"unlock", "--force", "fifo"}).status == 0);
    if (how == Freed::kExpired) holder->kill(SIGKILL);
    for (auto& w : waiters) CHECK(w.wait(deadline(30s)).value_or(kStillRunning) == 0);
    CHECK(read_order(order) == iota(16));
  }
}

TEST_CASE("fifo: 16 waiters x 10 runs are served in arrival order after a release") {
  run_fifo(Freed::kReleased);
}
TEST_CASE("fifo: 16 waiters x 10 runs are served in arrival order after the holder dies") {
  run_fifo(Freed::kExpired);
}
TEST_CASE("fifo: 16 waiters x 10 runs are served in arrival order after a forced unlock") {
  run_fifo(Freed::kForced);
}

TEST_CASE(
    "fifo: a SIGKILLed waiter is skipped at once; a SIGSTOPped one within the 2s claim window") {
  RedisServer redis;
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  REQUIRE(rlock(redis, {"lock", "fifo", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto waiters = start_waiters(redis, order, 8);
  waiters[3].kill(SIGKILL);
  REQUIRE(waiters[3].wait(deadline(10s)).has_value());
  REQUIRE(rlock(redis, {"unlock", "fifo", "--owner", "holder"}).status == 0);
  auto& w = waiters;
  REQUIRE(Spawned::wait_all({&w[0], &w[1], &w[2], &w[4], &w[5], &w[6], &w[7]}, deadline(10s)));
  for (int i = 0; i < 8; ++i) {
    if (i != 3) CHECK(w[i].wait(deadline(1s)).value_or(kStillRunning) == 0);
  }
  CHECK(read_order(order) == iota(8, 3));
  // No claim window (2s) was waited out for the dead one: waiter 4 ran within one exec's
  // time of waiter 2 (timing all seven runs would count a slow machine's job starts).
  CHECK(ms_between(w[2].exit_time(), w[4].exit_time()) < 1'500);

  write_file(order, "");
  REQUIRE(rlock(redis, {"lock", "fifo", "--owner", "holder", "--lease", "60s"}).status == 0);
  waiters = start_waiters(redis, order, 4);
  waiters[1].kill(SIGSTOP);
  REQUIRE(rlock(redis, {"unlock", "fifo", "--owner", "holder"}).status == 0);
  REQUIRE(Spawned::wait_all({&w[0], &w[2], &w[3]}, deadline(10s)));
  for (int i : {0, 2, 3}) CHECK(w[i].wait(deadline(1s)).value_or(kStillRunning) == 0);
  // The stopped one is passed over once its claim window (2s) is over: waiter 2 follows
  // waiter 0 by that window and one exec, not by a lease.
  CHECK(ms_between(w[0].exit_time(), w[2].exit_time()) < 2'000 + 1'500);
  waiters[1].kill(SIGCONT);  // it queues again at the end and runs last
  CHECK(waiters[1].wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(read_order(order) == std::vector<int>{0, 2, 3, 1});
}

}  // namespace
}  // namespace rlock::test
