// Holds that run commands (exec, sem exec, delay-pop -- CMD) when time misbehaves: a server
// that stalls and answers an acquisition late, a clock faked by libfaketime, and a host too
// busy for a short lease. The job runs when its hold is confirmed, is stopped before
// anyone else can hold what it held, and every stop says why on one line.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "harness.hpp"

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

}  // namespace
}  // namespace rlock::test
