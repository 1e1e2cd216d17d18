// Issue 34's commands under the faults of real machines: execs of a pool that share an
// owner id never share a member, and `elect --observe` outlives a server that restarts
// with its data lost or freezes, reporting what the server holds once it answers again.
#include <doctest/doctest.h>
#include <signal.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

json next_line(Spawned& observer, std::chrono::milliseconds within = 15s) {
  auto line = observer.read_line(deadline(within));
  REQUIRE_MESSAGE(line, observer.err());
  return parse_json(*line);
}

void await_subscribed(const RedisServer& redis, const std::string& name) {
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel(name) + ":observe") >= 1; }, 15s,
                     5ms));
}

const json kNobody = json{{"name", "obs"}, {"leader", nullptr}};

TEST_CASE("pool: execs sharing an owner id take different members, and never re-enter one") {
  RedisServer redis;
  TempDir dir;
  const std::vector<std::string> go = {make_fifo(dir, "go0"), make_fifo(dir, "go1")};
  std::vector<Spawned> jobs;
  std::vector<std::string> taken;
  for (int i = 0; i < 2; ++i) {
    jobs.push_back(spawn_rlock(redis, {"exec", "--owner", "same", "--one-of", "m1", "m2", "--",
                                       "sh", "-c", "echo $RLOCK_NAME; read x < " + go[i]}));
    auto name = jobs.back().read_line(deadline(10s));
    REQUIRE_MESSAGE(name, jobs.back().err());
    taken.push_back(*name);
  }
  CHECK(taken[0] != taken[1]);
  // A third exec of the same owner finds the pool busy: the owner id is no re-entry.
  auto third =
      rlock(redis, {"exec", "--owner", "same", "--no-wait", "--one-of", "m1", "m2", "--", "true"});
  INFO("stderr: " << third.err);
  CHECK(third.status == 75);
  for (const auto& g : go) write_file(g, "\n");
  for (auto& j : jobs) CHECK(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("m1")}) == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("m2")}) == 0);
}

TEST_CASE(
    "elect --observe: a server restarted with its data lost reads as nobody leads, then "
    "the next leader") {
  RedisServer redis;
  Spawned observer = spawn_rlock(redis, {"elect", "--observe", "obs"});
  CHECK(next_line(observer) == kNobody);
  await_subscribed(redis, "obs");
  REQUIRE(rlock(redis, {"lock", "--owner", "first", "--lease", "60s", "obs"}).status == 0);
  CHECK(next_line(observer)["leader"]["owner"] == "first");

  redis.restart();
  CHECK(next_line(observer) == kNobody);
  await_subscribed(redis, "obs");
  REQUIRE(rlock(redis, {"lock", "--owner", "second", "--lease", "60s", "obs"}).status == 0);
  CHECK(next_line(observer)["leader"]["owner"] == "second");
  observer.kill(SIGTERM);
  CHECK(observer.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("elect --observe: a server frozen past --timeout and thawed is followed again") {
  RedisServer redis;
  Spawned observer = spawn_rlock(redis, {"--timeout", "500ms", "elect", "--observe", "obs"});
  CHECK(next_line(observer) == kNobody);
  await_subscribed(redis, "obs");
  REQUIRE(rlock(redis, {"lock", "--owner", "held", "--lease", "60s", "obs"}).status == 0);
  CHECK(next_line(observer)["leader"]["owner"] == "held");

  redis.freeze();
  // Frozen for several of the observer's timeouts: it neither exits nor prints.
  CHECK_FALSE(observer.read_line(deadline(2s)).has_value());
  CHECK(observer.running());
  redis.thaw();
  await_subscribed(redis, "obs");
  REQUIRE(rlock(redis, {"unlock", "--owner", "held", "obs"}).status == 0);
  CHECK(next_line(observer) == kNobody);
  observer.kill(SIGTERM);
  CHECK(observer.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

}  // namespace
}  // namespace rlock::test
