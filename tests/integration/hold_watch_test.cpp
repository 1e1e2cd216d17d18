// A hold taken away on the server stops its job at once, not at the next renewal: exec's
// watchdog listens on the lock's holder channel, where `unlock --force` and a
// --supersede --cancel-running waiter tell the holders, and renews at once to find out.
// The renewal interval here is 10 s (the default 30 s lease), so a stop within 3 s can
// only come from the watch.
#include <doctest/doctest.h>
#include <signal.h>

#include "harness.hpp"
#include "lossy_proxy.hpp"

namespace rlock::test {
namespace {

// A job that says it runs, then waits; TERM ends it with status 3.
std::vector<std::string> exec_job(const std::string& owner, const std::vector<std::string>& extra,
                                  const std::string& name) {
  std::vector<std::string> args = {"exec", "--owner", owner};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {name, "--", "sh", "-c",
                           "trap 'exit 3' TERM; echo up; while :; do sleep 0.05; done"});
  return args;
}

// Waits until `job`'s watch subscription is in place (one subscriber on the holder channel).
void await_watching(const RedisServer& redis, const std::string& name) {
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel(name) + ":holder") >= 1; }, 10s,
                     2ms));
}

TEST_CASE("hold watch: unlock --force stops the job at once, not at the next renewal") {
  RedisServer redis;
  for (const bool shared : {false, true}) {
    CAPTURE(shared);
    const std::string name = shared ? "fs" : "fx";
    std::vector<std::string> extra;
    if (shared) extra.push_back("--shared");
    Spawned job = spawn_rlock(redis, exec_job("a", extra, name));
    REQUIRE(job.read_line(deadline(10s)) == std::optional<std::string>("up"));
    await_watching(redis, name);
    const auto forced = Clock::now();
    REQUIRE(rlock(redis, {"unlock", "--force", name}).status == 0);
    CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 76);
    CHECK(job.exit_time() - forced < 3s);
    INFO("stderr: " << job.err());
    CHECK(job.err().find("lock lost") != std::string::npos);
  }
}

TEST_CASE("hold watch: --cancel-running stops the running job at once; the newest runs next") {
  RedisServer redis;
  Spawned running = spawn_rlock(redis, exec_job("old", {"--supersede"}, "cr"));
  REQUIRE(running.read_line(deadline(10s)) == std::optional<std::string>("up"));
  await_watching(redis, "cr");
  const auto arrived = Clock::now();
  Spawned newest = spawn_rlock(redis, {"exec", "--owner", "new", "--supersede", "--cancel-running",
                                       "--wait", "60s", "cr", "--", "echo", "newest"});
  REQUIRE(Spawned::wait_all({&running, &newest}, deadline(10s)));
  CHECK(running.wait(deadline(1s)).value_or(kStillRunning) == 79);
  CHECK(newest.wait(deadline(1s)).value_or(kStillRunning) == 0);
  CHECK(newest.out() == "newest\n");
  CHECK(newest.exit_time() - arrived < 3s);
}

TEST_CASE("hold watch: messages of other holds of the lock do not stop the job") {
  RedisServer redis;
  Spawned job = spawn_rlock(redis, exec_job("a", {"--shared"}, "rd"));
  REQUIRE(job.read_line(deadline(10s)) == std::optional<std::string>("up"));
  await_watching(redis, "rd");
  // Readers coming and going, and a forced unlock of another lock: each may make a renewal
  // come early, none loses the hold.
  for (int i = 0; i < 20; ++i) {
    const std::string owner = "r" + std::to_string(i);
    REQUIRE(rlock(redis, {"lock", "--shared", "--owner", owner, "rd"}).status == 0);
    REQUIRE(rlock(redis, {"unlock", "--shared", "--owner", owner, "rd"}).status == 0);
  }
  REQUIRE(rlock(redis, {"lock", "--owner", "x", "other"}).status == 0);
  REQUIRE(rlock(redis, {"unlock", "--force", "other"}).status == 0);
  CHECK(job.running());
  CHECK(rlock(redis, {"lock", "--no-wait", "--owner", "w", "rd"}).status == 75);
  job.kill(SIGTERM);
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 3);
}

// The subscription dropped (its connection killed): the drop makes a renewal come at once,
// and the subscription is opened again a second later, with a renewal right after it for
// what was said while nobody listened. The forced unlock here comes after the drop's
// renewal and before the reopening, when no subscriber hears it: only that last renewal
// can stop the job before the next periodic one (10 s).
TEST_CASE("hold watch: a dropped subscription is reopened, and a renewal covers its gap") {
  RedisServer redis;
  Spawned job = spawn_rlock(redis, exec_job("a", {}, "dr"));
  REQUIRE(job.read_line(deadline(10s)) == std::optional<std::string>("up"));
  await_watching(redis, "dr");
  REQUIRE(poll_until([&] { return redis.cmd_int({"PTTL", lock_key("dr")}) < 29800; }, 10s));
  redis.cmd({"CLIENT", "KILL", "TYPE", "pubsub"});
  // The drop's renewal sets the lease back to its full 30 s.
  REQUIRE(poll_until([&] { return redis.cmd_int({"PTTL", lock_key("dr")}) > 29800; }, 10s, 2ms));
  const auto forced = Clock::now();
  REQUIRE(subscribers(redis, lock_channel("dr") + ":holder") == 0);
  REQUIRE(rlock(redis, {"unlock", "--force", "dr"}).status == 0);
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 76);
  CHECK(job.exit_time() - forced < 3s);
  INFO("stderr: " << job.err());
  CHECK(job.err().find("lock lost") != std::string::npos);
}

// The forced unlock's message reaches rlock in the same read as the subscription's
// confirmation (a slow path, or rlock descheduled between its SSUBSCRIBE and the reply):
// it is then in the client's buffer, where no poll of the socket sees it, and must still
// stop the job. A proxy holds the confirmation until the message is behind it. Plain
// standalone servers on every topology's run: the proxy fronts one server.
TEST_CASE("hold watch: a message read with the subscription's confirmation stops the job") {
  RedisServer redis(RedisOptions{.test_topology = false});
  LossyProxy proxy(redis.port());
  const std::string channel = lock_channel("hr") + ":holder";
  proxy.lose("\r\nSSUBSCRIBE\r\n", LossyProxy::Loss::kHeldReply);
  Spawned job({rlock_binary(), "--url", proxy.url(), "exec", "--owner", "a", "hr", "--", "sh", "-c",
               "trap 'exit 3' TERM; echo up; while :; do sleep 0.05; done"});
  REQUIRE(job.read_line(deadline(10s)) == std::optional<std::string>("up"));
  REQUIRE(poll_until([&] { return subscribers(redis, channel) >= 1; }, 10s, 2ms));
  const auto forced = Clock::now();
  REQUIRE(rlock(redis, {"unlock", "--force", "hr"}).status == 0);
  REQUIRE(poll_until([&] { return proxy.held_contains(channel + "\r\n$5\r\ncheck"); }, 10s, 1ms));
  // rlock waits 500 ms for the confirmation: it must still be waiting, or this tests nothing.
  REQUIRE(proxy.release_held() == 1);
  CHECK(job.wait(deadline(15s)).value_or(kStillRunning) == 76);
  CHECK(job.exit_time() - forced < 3s);
  INFO("stderr: " << job.err());
  CHECK(job.err().find("lock lost") != std::string::npos);
}

}  // namespace
}  // namespace rlock::test
