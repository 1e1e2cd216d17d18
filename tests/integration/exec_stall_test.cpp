// Holds that run commands (exec, sem exec, delay-pop -- CMD) when time misbehaves: a server
// that stalls and answers an acquisition late, a clock faked by libfaketime, and a host too
// busy for a short lease. The job runs when its hold is confirmed, is stopped before
// anyone else can hold what it held, and every stop says why on one line.
#include <doctest/doctest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "harness.hpp"
#include "lossy_proxy.hpp"
#include "redis/topology.hpp"

namespace rlock::test {
namespace {

// The three forms of running a command under a hold, with the hold's lease as `lease`, and
// what another process runs to take the same thing once it is free (`other`).
struct HeldForm {
  const char* what;
  std::vector<std::string> (*args)(const std::string& lease);
  std::vector<std::string> other;
};

std::vector<std::string> with_command(std::vector<std::string> args,
                                      const std::vector<std::string>& command) {
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

const HeldForm kForms[] = {
    {"exec",
     [](const std::string& lease) -> std::vector<std::string> {
       return {"exec", "--wait", "20s", "--lease", lease, "L"};
     },
     {"lock", "--wait", "20s", "--owner", "other", "L"}},
    {"sem exec",
     [](const std::string& lease) -> std::vector<std::string> {
       return {"sem", "exec", "--permits", "1", "--wait", "20s", "--lease", lease, "S"};
     },
     {"sem", "acquire", "--permits", "1", "--wait", "20s", "S"}},
    {"delay-pop",
     [](const std::string& lease) -> std::vector<std::string> {
       return {"delay-pop", "q", "--wait", "20s", "--max-deliveries", "1", "--visibility", lease};
     },
     {"delay-pop", "q", "--wait", "8s"}},  // takes the item if its lease ran out
};

void push_item(RedisServer& redis) {
  auto r = rlock(redis, {"delay-push", "q", "item", "--delay", "0", "--id", "i1"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
}

TEST_CASE("exec, sem exec, delay-pop: a hold a stalled server grants late is confirmed and runs") {
  for (const auto& form : kForms) {
    INFO("form: " << std::string(form.what));
    RedisServer redis;
    const bool queue = std::string(form.what) == "delay-pop";
    if (queue) push_item(redis);
    // The acquisition waits out the pause on the server; its lease starts when the server
    // takes it, but by the time the reply comes the 2s lease measured from the send has
    // (nearly) run out.
    redis.cmd({"CLIENT", "PAUSE", "2500", "WRITE"});
    auto args = with_command(form.args("2s"), {"sh", "-c", "cat >/dev/null; echo ran"});
    args.insert(args.begin(), {"--timeout", "10s"});
    auto r = rlock(redis, args);
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "ran\n");
    if (queue) {
      CHECK(redis.cmd_int({"EXISTS", "rlock:queue:{q}:dead"}) == 0);
      CHECK(redis.cmd_int({"HLEN", "rlock:queue:{q}:items"}) == 0);  // acknowledged
    }
  }
}

int blocked_clients(RedisServer& redis) {
  auto info = redis.cmd_str({"INFO", "clients"});
  auto at = info.find("blocked_clients:");
  return at == std::string::npos ? -1 : std::stoi(info.substr(at + 16));
}

TEST_CASE("exec: a late hold that no renewal confirms is given back and waited for again") {
  RedisServer redis;
  // Scripts cached, so that the request the pause holds back is the acquisition itself.
  REQUIRE(rlock(redis, {"exec", "L", "--", "true"}).status == 0);
  redis.cmd({"CLIENT", "PAUSE", "3000", "WRITE"});
  auto job = spawn_rlock(redis, {"--timeout", "10s", "exec", "--wait", "20s", "--lease", "2s", "L",
                                 "--", "echo", "ran"});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 1; }, 10s));
  // Held back behind the acquisition, a DEL takes the lock away as soon as it is granted:
  // the renewal that would confirm the late hold finds it gone.
  Spawned del({"redis-cli", "-p", std::to_string(redis.port()), "DEL", lock_key("L")});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 2; }, 10s));
  auto status = job.wait(deadline(20s));
  INFO("stderr: " << job.err());
  CHECK(status == std::optional<int>(0));
  CHECK(job.out() == "ran\n");
  CHECK(del.wait(deadline(10s)) == std::optional<int>(0));
}

TEST_CASE("exec: a late hold given back and then busy until --wait ends exits 75 unrun") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"exec", "L", "--", "true"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "w", "--owner", "o"}).status == 0);  // lock script cached
  redis.cmd({"CLIENT", "PAUSE", "3000", "WRITE"});
  auto job = spawn_rlock(redis, {"--timeout", "10s", "exec", "--wait", "4s", "--lease", "2s", "L",
                                 "--", "echo", "ran"});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 1; }, 10s));
  // Behind the acquisition: a DEL takes the lock away, then another owner takes it for
  // longer than the --wait left, so that waiting again ends busy.
  Spawned del({"redis-cli", "-p", std::to_string(redis.port()), "DEL", lock_key("L")});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 2; }, 10s));
  auto other = spawn_rlock(redis, {"lock", "L", "--owner", "other", "--lease", "60s"});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 3; }, 10s));
  auto status = job.wait(deadline(20s));
  INFO("stderr: " << job.err());
  CHECK(status == std::optional<int>(75));
  CHECK(job.out().empty());
  CHECK(other.wait(deadline(10s)) == std::optional<int>(0));
  CHECK(del.wait(deadline(10s)) == std::optional<int>(0));
}

TEST_CASE("sem exec: a late hold that no renewal confirms is given back and waited for again") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"sem", "exec", "--permits", "1", "S", "--", "true"}).status == 0);
  redis.cmd({"CLIENT", "PAUSE", "3000", "WRITE"});
  auto job = spawn_rlock(redis, {"--timeout", "10s", "sem", "exec", "--permits", "1", "--wait",
                                 "20s", "--lease", "2s", "S", "--", "echo", "ran"});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 1; }, 10s));
  // Held back behind the acquisition, a DEL of the permits takes them away as soon as they
  // are granted: the renewal that would confirm them finds them gone.
  Spawned del({"redis-cli", "-p", std::to_string(redis.port()), "DEL", "rlock:sem:{S}"});
  REQUIRE(poll_until([&] { return blocked_clients(redis) == 2; }, 10s));
  auto status = job.wait(deadline(20s));
  INFO("stderr: " << job.err());
  CHECK(status == std::optional<int>(0));
  CHECK(job.out() == "ran\n");
  CHECK(del.wait(deadline(10s)) == std::optional<int>(0));
}

TEST_CASE("delay-pop -- CMD: an item leased too late and not confirmed runs later, uncounted") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  // Scripts cached, so that the requests held back are the lease-pop and the renewal.
  rlock(redis, {"delay-push", "w", "--delay", "0", "x"});
  rlock(redis, {"delay-pop", "w", "--", "true"});
  auto pushed = rlock(redis, {"delay-push", "q", "item", "--delay", "0", "--id", "late-item"});
  REQUIRE(pushed.status == 0);
  // The lease-pop waits out the pause and comes back past its local deadline; every try of
  // the renewal that would confirm it (the first request naming the item) gets no reply.
  proxy.lose("late-item", LossyProxy::Loss::kStalledReply, redis::kMaxTries);
  redis.cmd({"CLIENT", "PAUSE", "3000", "WRITE"});
  std::vector<std::string> argv = {"--url",
                                   proxy.url(),
                                   "--timeout",
                                   "10s",
                                   "delay-pop",
                                   "q",
                                   "--wait",
                                   "20s",
                                   "--max-deliveries",
                                   "1",
                                   "--visibility",
                                   "2s",
                                   "--",
                                   "sh",
                                   "-c",
                                   "cat; echo \" $RLOCK_DELIVERIES\""};
  auto r = rlock_raw(argv);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == redis::kMaxTries);
  CHECK(r.status == 0);
  CHECK(r.out == "item 1\n");  // run once, as its first delivery
  CHECK(redis.cmd_int({"LLEN", "rlock:queue:{q}:dead"}) == 0);
  CHECK(redis.cmd_int({"EXISTS", "rlock:queue:{q}:items"}) == 0);  // acknowledged
}

TEST_CASE("exec, sem exec, delay-pop: under libfaketime the lease is kept while the job runs") {
  REQUIRE_MESSAGE(run({"faketime", "-f", "+1h", "true"}).status == 0,
                  "faketime is needed (scripts/install-deps.sh faketime)");
  for (const auto& form : kForms) {
    INFO("form: " << std::string(form.what));
    RedisServer redis;
    const bool queue = std::string(form.what) == "delay-pop";
    if (queue) push_item(redis);
    // The job outlives its 2s lease: only renewals keep it.
    auto argv = rlock_argv(
        redis, with_command(form.args("2s"), {"sh", "-c", "echo $$; sleep 5; echo done"}));
    argv.insert(argv.begin(), {"faketime", "-f", "+1h"});
    Spawned job(argv, {{"FAKETIME_DONT_FAKE_MONOTONIC", "1"}});
    auto line = job.read_line(deadline(10s));
    INFO("job stdout: " << job.out() << "\njob stderr: " << job.err());
    REQUIRE(line.has_value());
    PidGuard child(static_cast<pid_t>(std::stol(*line)));
    // Another holder, or another consumer of the item, gets it only once the job is over.
    auto other = spawn_rlock(redis, form.other);
    auto other_status = other.wait(deadline(25s));
    INFO("other stdout: " << other.out() << "\nother stderr: " << other.err());
    CHECK(child.wait_gone(0ms));  // gone before the other got anything
    CHECK(job.wait(deadline(10s)) == std::optional<int>(0));
    CHECK(job.out().find("done") != std::string::npos);
    CHECK(other_status == std::optional<int>(queue ? 75 : 0));
  }
}

// Busy loops on every CPU while short leases run: renewals and the guardian's "valid until"
// come late, and a job stopped for it must be explained.
class BusyCpus {
 public:
  BusyCpus() {
    long n = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    for (long i = 0; i < n; ++i)
      loops_.emplace_back(std::vector<std::string>{"sh", "-c", "while :; do :; done"});
  }

 private:
  std::vector<Spawned> loops_;  // SIGKILLed by pid when destroyed
};

TEST_CASE("exec --lease 30ms under busy CPUs: every run exits 0 or 76, and a stop says why") {
  RedisServer redis;
  BusyCpus busy;
  int lost = 0;
  for (int i = 0; i < 60; ++i) {
    CAPTURE(i);
    // --wait: a run that lost its lease leaves it to expire.
    auto r = rlock(
        redis, {"exec", "--wait", "5s", "--lease", "30ms", "L30", "--", "sh", "-c", "sleep 0.05"});
    INFO("status " << r.status << ", stderr: " << r.err);
    REQUIRE((r.status == 0 || r.status == 76));
    if (r.status == 76) {
      ++lost;
      CHECK(r.err.rfind("rlock: ", 0) == 0);
      CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
    }
  }
  MESSAGE(lost << " of 60 runs lost their 30ms lease");
}

// Where the kernel's fair scheduler makes a task of normal priority wait: CPU-bound loops
// of the highest weight (nice -20) on the CPU it runs on. Such a task runs only once each
// loop has used up far more CPU than it, for up to seconds (EEVDF gives it a late
// deadline). One CPU (kStarvedCpu) only, and what is tested is pinned there: the suite's
// other runs go on beside it on the other CPUs.
constexpr const char* kStarvedCpu = "0";
class StarvedCpu {
 public:
  StarvedCpu() {
    for (int i = 0; i < 64; ++i)
      loops_.emplace_back(std::vector<std::string>{"taskset", "-c", kStarvedCpu, "nice", "-n",
                                                   "-20", "sh", "-c", "while :; do :; done"});
  }

 private:
  std::vector<Spawned> loops_;  // SIGKILLed by pid when destroyed
};

// This thread at a real-time priority above the guardian's while it lives, so that what it
// measures is when things happened, not when it was let to look.
class RealTimeWatcher {
 public:
  RealTimeWatcher() {
    sched_param p{};
    p.sched_priority = 2;
    REQUIRE(sched_setscheduler(0, SCHED_FIFO, &p) == 0);
  }
  ~RealTimeWatcher() {
    sched_param p{};
    sched_setscheduler(0, SCHED_OTHER, &p);
  }
};

// The stop point holds when rlock's side of the machine is starved: the guardian, which
// stops the job when the lease it knows of is about to end, raises its priority where it
// may (root here). Without that it got its turn seconds late and the job outlived its lease.
TEST_CASE("exec --lease 3s behind a blackhole on a starved CPU: the job is gone before it ends") {
  // One server is enough: what is tested is rlock's own scheduling, the same on every
  // topology, and the loops are not run four times beside the suite's other runs.
  if (test_topology() != "standalone") return;
  if (geteuid() != 0) {
    MESSAGE("skipped: starving the CPU with nice -20 loops needs root");
    return;
  }
  RedisServer redis;
  LossyProxy proxy(redis.port());
  // The job at a real-time priority too (it only sleeps): its death, once signalled, is
  // then not delayed by the loops, and what is measured is when it was signalled.
  Spawned exec({"taskset", "-c", kStarvedCpu, rlock_binary(), "--url", proxy.url(), "--timeout",
                "500ms", "exec", "--lease", "3s", "L", "--", "chrt", "-f", "3", "sh", "-c",
                "echo $$; exec sleep 600"});
  auto line = exec.read_line(deadline(10s));
  INFO("rlock stderr: " << exec.err());
  REQUIRE(line.has_value());
  Fd job(static_cast<int>(syscall(SYS_pidfd_open, std::stoi(*line), 0)));
  REQUIRE(job.get() >= 0);
  StarvedCpu starved;
  RealTimeWatcher watcher;
  // Every renewal from here on goes nowhere: the last one that counted was sent before now.
  const auto cut = Clock::now();
  proxy.cut(LossyProxy::Cut::kStall);
  pollfd p{job.get(), POLLIN, 0};
  REQUIRE(poll(&p, 1, 20'000) == 1);
  const auto gone = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - cut);
  MESSAGE("the job was gone " << gone.count() << " ms after the cut");
  CHECK(gone < 3s);
}

}  // namespace
}  // namespace rlock::test
