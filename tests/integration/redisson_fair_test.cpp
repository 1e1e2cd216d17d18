// --layout redisson --redisson-object fair-lock against Redisson's own RFairLock scripts,
// run verbatim (tests/redisson/redisson_fair_*.lua) by tests/redisson/fair_peer.js as
// RedissonLock.lock() runs them: one FIFO queue for both sides, each side's release waking
// the other's head waiter on its own channel, and the stalls of a waiter that went away.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "harness.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test {
namespace {

using redisson::epoch_ms;
using redisson::kPeerDir;
using redisson::redisson_eval;

const std::string kJavaUuid = "00000000-0000-4000-8000-000000000001";

bool peer_installed() { return redisson::peers_installed("ioredis"); }

// A Java fair waiter or holder, thread `thread` of fair_peer.js's UUID; `wait_ms` its
// threadWaitTime (0: Redisson's default 5 min).
Spawned java(const RedisServer& redis, const std::string& name, const std::string& thread,
             std::vector<std::string> args, long long wait_ms = 0) {
  std::vector<std::string> argv = {"env",
                                   "FAIR_WAIT=" + std::to_string(wait_ms ? wait_ms : 300000),
                                   "node",
                                   kPeerDir + "/fair_peer.js",
                                   std::to_string(redis.port()),
                                   name,
                                   thread};
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

std::vector<std::string> fair(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson", "--redisson-object", "fair-lock"});
  return args;
}

long long after_space(const std::optional<std::string>& line) {
  REQUIRE(line.has_value());
  return std::stoll(line->substr(line->find(' ') + 1));
}

std::string queue_of(const std::string& name) { return "redisson_lock_queue:{" + name + "}"; }
std::string timeouts_of(const std::string& name) { return "redisson_lock_timeout:{" + name + "}"; }

void wait_queued(const RedisServer& redis, const std::string& name, long long n) {
  REQUIRE(poll_until([&] { return redis.cmd_int({"LLEN", queue_of(name)}) == n; }, 10s));
}

TEST_CASE(
    "redisson fair lock: rlock exec and Redisson's scripts exclude each other over 25 rounds") {
  REQUIRE(peer_installed());
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  Spawned peer = java(redis, "fj", "1", {"rounds", "25", log});
  for (int i = 0; i < 25; ++i) {
    auto r = rlock(redis, fair({"exec", "--wait", "20s", "--lease", "3s", "fj", "--", "sh", "-c",
                                "echo + >> " + log + "; sleep 0.002; echo - >> " + log}));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  REQUIRE(peer.wait(deadline(30s)).value_or(kStillRunning) == 0);
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += "+\n-\n";
  CHECK(read_file(log) == expected);
  CHECK(redis.cmd_int({"EXISTS", "fj", queue_of("fj"), timeouts_of("fj")}) == 0);
}

TEST_CASE(
    "redisson fair lock: Java and rlock waiters are served in one FIFO order, woken at once") {
  REQUIRE(peer_installed());
  RedisServer redis;
  REQUIRE(rlock(redis, fair({"lock", "ff", "--owner", "h", "--lease", "30s"})).status == 0);
  Spawned j1 = java(redis, "ff", "1", {"wait", "300"});
  REQUIRE(j1.read_line(deadline(10s)) == "queued");
  auto r = spawn_rlock(redis, fair({"exec", "--wait", "20s", "ff", "--", "date", "+%s%3N"}));
  wait_queued(redis, "ff", 2);
  Spawned j2 = java(redis, "ff", "2", {"wait", "0"});
  REQUIRE(j2.read_line(deadline(10s)) == "queued");
  auto inspect = rlock(redis, fair({"inspect", "ff"}));
  CHECK(inspect.out.find("\"waiters_total\":3") != std::string::npos);
  CHECK(inspect.out.find(kJavaUuid + ":1") < inspect.out.find(kJavaUuid + ":2"));

  const long long released = epoch_ms();
  REQUIRE(rlock(redis, fair({"unlock", "ff", "--owner", "h"})).status == 0);
  const long long j1_at = after_space(j1.read_line(deadline(10s)));
  const long long j1_released = after_space(j1.read_line(deadline(10s)));
  REQUIRE(r.wait(deadline(10s)).value_or(kStillRunning) == 0);
  const long long r_at = std::stoll(r.out());
  const long long j2_at = after_space(j2.read_line(deadline(10s)));
  MESSAGE("rlock unlock -> Java fair waiter holds: " << j1_at - released << " ms");
  MESSAGE("Java unlock -> rlock exec job starts: " << r_at - j1_released << " ms");
  MESSAGE("rlock exec ends -> next Java fair waiter holds: " << j2_at - r_at << " ms");
  CHECK(j1_at - released < 1000);
  CHECK(r_at - j1_released < 1000);
  CHECK(j2_at > r_at);
  CHECK(j2_at - r_at < 1000);
  REQUIRE(j2.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(j1.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson fair lock: re-entry counts are shared with Redisson's scripts") {
  RedisServer redis;
  const std::string field = kJavaUuid + ":7";
  REQUIRE(rlock(redis, fair({"lock", "fr", "--owner", field})).status == 0);
  auto t =
      redisson_eval(redis, "redisson_fair_try_lock.lua", {"fr", queue_of("fr"), timeouts_of("fr")},
                    {"30000", field, "300000", std::to_string(epoch_ms())});
  REQUIRE(t.status == 0);
  CHECK(redis.cmd_str({"HGET", "fr", field}) == "2");
  auto again = rlock(redis, fair({"lock", "fr", "--owner", field}));
  CHECK(again.out.find("\"count\":3") != std::string::npos);
  REQUIRE(rlock(redis, fair({"unlock", "fr", "--owner", field})).status == 0);
  REQUIRE(rlock(redis, fair({"unlock", "fr", "--owner", field})).status == 0);
  auto u = redisson_eval(redis, "redisson_fair_unlock.lua",
                         {"fr", queue_of("fr"), timeouts_of("fr"), "redisson_lock__channel:{fr}",
                          "redisson_unlock_latch:{fr}:x"},
                         {"0", "30000", field, std::to_string(epoch_ms()), "publish", "10000"});
  CHECK(u.out == "1\n");
  CHECK(redis.cmd_int({"EXISTS", "fr"}) == 0);
}

TEST_CASE("redisson fair lock: a Java holder that stops renewing loses it to rlock at its lease") {
  REQUIRE(peer_installed());
  RedisServer redis;
  Spawned holder = java(redis, "fs", "1", {"hold", "1500"});
  const long long held = after_space(holder.read_line(deadline(10s)));
  REQUIRE(holder.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto r = rlock(redis, fair({"exec", "--wait", "10s", "fs", "--", "date", "+%s%3N"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const long long started = std::stoll(r.out);
  MESSAGE("Java hold's 1500 ms lease -> rlock job starts after " << started - held << " ms");
  CHECK(started - held >= 1400);
  CHECK(started - held < 3000);
}

TEST_CASE(
    "redisson fair lock: a Java waiter that went away holds rlock up no longer than Redisson") {
  REQUIRE(peer_installed());
  RedisServer redis;
  REQUIRE(rlock(redis, fair({"lock", "fg", "--owner", "h", "--lease", "2s"})).status == 0);
  // A Java waiter with a 2 s threadWaitTime queues and dies: Redisson drops it once its
  // timeout (the lock's ttl + 2 s) passes. rlock's waiter behind it sleeps until then.
  Spawned gone = java(redis, "fg", "1", {"enqueue"}, 2000);
  REQUIRE(gone.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto r = spawn_rlock(redis, fair({"exec", "--wait", "20s", "fg", "--", "date", "+%s%3N"}));
  wait_queued(redis, "fg", 2);
  const std::string field = kJavaUuid + ":1";
  const long long timeout = std::stoll(redis.cmd_str({"ZSCORE", timeouts_of("fg"), field}));
  REQUIRE(r.wait(deadline(40s)).value_or(kStillRunning) == 0);
  const long long started = std::stoll(r.out());
  MESSAGE("dead Java waiter's timeout -> rlock job starts: " << started - timeout << " ms");
  CHECK(started >= timeout);
  CHECK(started - timeout < 1000);
}

TEST_CASE("redisson fair lock: a SIGKILLed rlock waiter stalls a Java waiter only for its wait") {
  REQUIRE(peer_installed());
  RedisServer redis;
  REQUIRE(rlock(redis, fair({"lock", "fk", "--owner", "h", "--lease", "3s"})).status == 0);
  auto w = spawn_rlock(redis, fair({"lock", "--wait", "2s", "fk", "--owner", "w"}));
  wait_queued(redis, "fk", 1);
  Spawned j = java(redis, "fk", "1", {"wait", "0"}, 2000);
  REQUIRE(j.read_line(deadline(10s)) == "queued");
  const std::string w_field = redis.cmd_str({"LINDEX", queue_of("fk"), "0"});
  w.kill(SIGKILL);
  w.wait(deadline(5s));
  REQUIRE(rlock(redis, fair({"unlock", "fk", "--owner", "h"})).status == 0);
  const long long timeout = std::stoll(redis.cmd_str({"ZSCORE", timeouts_of("fk"), w_field}));
  const long long at = after_space(j.read_line(deadline(40s)));
  MESSAGE("killed rlock waiter's timeout (its --wait) -> Java waiter holds: " << at - timeout
                                                                              << " ms");
  CHECK(at >= timeout - 50);  // the Java side's clock against the server's
  CHECK(at - timeout < 1000);
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);

  // An rlock waiter that gives up leaves the queue and its timeout, as acquireFailedAsync.
  REQUIRE(rlock(redis, fair({"lock", "fk", "--owner", "h", "--lease", "30s"})).status == 0);
  CHECK(rlock(redis, fair({"lock", "--wait", "300ms", "fk", "--owner", "w"})).status == 75);
  CHECK(redis.cmd_int({"EXISTS", queue_of("fk"), timeouts_of("fk")}) == 0);
}

TEST_CASE("redisson fair lock: a SIGSTOPped rlock holder's job dies before Java gets the lock") {
  REQUIRE(peer_installed());
  RedisServer redis;
  auto job =
      spawn_rlock(redis, fair({"exec", "--lease", "2s", "--kill-after", "1s", "--owner", "job",
                               "fp", "--", "sh", "-c", "trap '' TERM; echo $$; exec sleep 60"}));
  auto line = job.read_line(deadline(10s));
  REQUIRE(line.has_value());
  PidGuard child(static_cast<pid_t>(std::stol(*line)));
  job.kill(SIGSTOP);
  Spawned j = java(redis, "fp", "1", {"wait", "0"});
  REQUIRE(j.read_line(deadline(10s)) == "queued");
  REQUIRE(j.read_line(deadline(15s)).has_value());  // acquired
  CHECK(child.wait_gone(0ms));
  job.kill(SIGCONT);
  CHECK(job.wait(deadline(10s)) == std::optional<int>(76));
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson fair lock: unlock --force frees a Java hold and wakes the queue's head") {
  REQUIRE(peer_installed());
  RedisServer redis;
  auto t =
      redisson_eval(redis, "redisson_fair_try_lock.lua", {"fu", queue_of("fu"), timeouts_of("fu")},
                    {"30000", kJavaUuid + ":5", "300000", std::to_string(epoch_ms())});
  REQUIRE(t.status == 0);
  Spawned j = java(redis, "fu", "1", {"wait", "0"});
  REQUIRE(j.read_line(deadline(10s)) == "queued");
  auto shown = rlock(redis, fair({"inspect", "fu"}));
  CHECK(shown.out.find(kJavaUuid + ":5") != std::string::npos);
  CHECK(shown.out.find("\"kind\":\"redisson-fair\"") != std::string::npos);
  const long long forced = epoch_ms();
  auto f = rlock(redis, fair({"unlock", "--force", "fu"}));
  REQUIRE_MESSAGE(f.status == 0, f.err);
  const long long at = after_space(j.read_line(deadline(10s)));
  MESSAGE("rlock unlock --force -> Java fair waiter holds: " << at - forced << " ms");
  CHECK(at - forced < 1000);
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson fair lock: Redisson's sharded-mode release (SPUBLISH) wakes rlock's waiter") {
  RedisServer redis;
  const std::string field = kJavaUuid + ":5";
  auto t = redisson_eval(redis, "redisson_fair_try_lock.lua",
                         {"fp2", queue_of("fp2"), timeouts_of("fp2")},
                         {"30000", field, "300000", std::to_string(epoch_ms())});
  REQUIRE(t.status == 0);
  auto r = spawn_rlock(redis, fair({"exec", "--wait", "20s", "fp2", "--", "date", "+%s%3N"}));
  wait_queued(redis, "fp2", 1);
  // Subscribed by then: the waiter subscribes before it queues.
  const long long released = epoch_ms();
  auto u = redisson_eval(redis, "redisson_fair_unlock.lua",
                         {"fp2", queue_of("fp2"), timeouts_of("fp2"),
                          "redisson_lock__channel:{fp2}", "redisson_unlock_latch:{fp2}:y"},
                         {"0", "30000", field, std::to_string(epoch_ms()), "spublish", "10000"});
  REQUIRE(u.out == "1\n");
  REQUIRE(r.wait(deadline(10s)).value_or(kStillRunning) == 0);
  MESSAGE("Redisson unlock (SPUBLISH) -> rlock exec job starts: " << std::stoll(r.out()) - released
                                                                  << " ms");
  CHECK(std::stoll(r.out()) - released < 1000);
}

TEST_CASE("redisson fair lock: a nested request for the exec's own fair lock is refused, 65") {
  RedisServer redis;
  auto r = rlock(redis, fair({"exec", "fn", "--", rlock_binary(), "--url", redis.url(), "--layout",
                              "redisson", "--redisson-object", "fair-lock", "lock", "--wait", "10s",
                              "fn", "--owner", "inner"}));
  CHECK(r.status == 65);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("this request would wait for itself") != std::string::npos);
  CHECK(redis.cmd_int({"EXISTS", "fn", queue_of("fn"), timeouts_of("fn")}) == 0);
}

TEST_CASE("redisson fair lock: bad input is refused with one line, exit 64, nothing written") {
  RedisServer redis;
  for (const auto& args : std::vector<std::vector<std::string>>{
           fair({"lock", "-s", "fb", "--owner", "a"}),
           fair({"lock", "f{b}", "--owner", "a"}),
           {"--redisson-object", "fair-lock", "lock", "fb", "--owner", "a"},
           {"--layout", "redisson", "--redisson-object", "fair", "lock", "fb"}}) {
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(redis.cmd({"KEYS", "*"}).empty());
}

}  // namespace
}  // namespace rlock::test
