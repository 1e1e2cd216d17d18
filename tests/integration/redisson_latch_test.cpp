// `rlock latch` under --layout redisson against Redisson's own RCountDownLatch scripts, their
// Lua text run verbatim with redis-cli EVAL (tests/redisson/README says where they come
// from): counts shared both ways over many rounds, each side's zero waking the other
// side's waiter, PUBLISH and SPUBLISH, a latch only Java created seen by inspect, a
// SIGSTOPped waiter, and what is refused.
#include <doctest/doctest.h>
#include <signal.h>

#include "lossy_proxy.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test {
namespace {

using redisson::ChannelListener;
using redisson::epoch_ms;
using redisson::eval;

std::string channel_of(const std::string& name) {
  return "redisson_countdownlatch__channel__{" + name + "}";
}

std::vector<std::string> in_layout(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson"});
  return args;
}

// Java's side, as RedissonCountDownLatch calls its scripts (LongCodec: plain integers).
struct JavaLatch {
  const RedisServer& redis;
  std::string name;
  std::string try_set_count(long long n, const std::string& publish = "publish") const {
    return eval(redis, "redisson_latch_try_set_count.lua", {name, channel_of(name)},
                {"1", std::to_string(n), publish});
  }
  void count_down(const std::string& publish = "publish") const {
    eval(redis, "redisson_latch_count_down.lua", {name, channel_of(name)}, {"0", publish});
  }
  std::string remove(const std::string& publish = "publish") const {
    return eval(redis, "redisson_latch_delete.lua", {name, channel_of(name)}, {"1", publish});
  }
  // RCountDownLatch.getCount: GET, a missing latch reads 0.
  long long count() const {
    auto r = redis.cmd_str({"GET", name});
    return r.empty() ? 0 : std::stoll(r);
  }
};

// An `rlock latch await` on `name`, returned once it listens on the latch's channel.
Spawned awaiting(const RedisServer& redis, const std::string& name) {
  auto w = spawn_rlock(redis, in_layout({"latch", "await", name, "--wait", "20s"}));
  REQUIRE(poll_until([&] { return subscribers(redis, channel_of(name)) == 1; }, 10s));
  return w;
}

TEST_CASE("redisson latch: counts are shared both ways over 10 rounds, each zero wakes the other") {
  RedisServer redis;
  JavaLatch java{redis, "build"};
  ChannelListener listener(redis, channel_of("build"));
  for (int round = 0; round < 10; ++round) {
    CAPTURE(round);
    // Java sets, rlock counts down: Java's waiter hears "0" and the latch is gone.
    REQUIRE(java.try_set_count(3) == "1\n");
    CHECK(listener.next() == "1");
    CHECK(java.try_set_count(5) == "0\n");  // live: Java's trySetCount refuses
    CHECK(rlock(redis, in_layout({"latch", "set", "build", "4"})).status == 75);
    CHECK(java.count() == 3);
    auto status = parse_json(rlock(redis, in_layout({"latch", "status", "build"})).out);
    CHECK(status.at("count") == 3);
    REQUIRE(rlock(redis, in_layout({"latch", "count-down", "build", "--by", "2"})).status == 0);
    CHECK(java.count() == 1);
    const long long before = epoch_ms();
    auto last = parse_json(rlock(redis, in_layout({"latch", "count-down", "build"})).out);
    CHECK(last.at("reached") == true);
    CHECK(listener.next() == "0");
    MESSAGE("rlock count-down to zero -> Redisson's channel: " << epoch_ms() - before
                                                               << " ms, process start included");
    CHECK(redis.cmd_int({"EXISTS", "build"}) == 0);

    // rlock sets, Java counts down: rlock's waiter wakes on Java's "0".
    REQUIRE(rlock(redis, in_layout({"latch", "set", "build", "2"})).status == 0);
    CHECK(listener.next() == "1");
    CHECK(redis.cmd_str({"GET", "build"}) == "2");
    CHECK(java.try_set_count(9) == "0\n");
    auto waiter = awaiting(redis, "build");
    java.count_down();
    CHECK(waiter.wait(deadline(300ms)) == std::nullopt);
    const long long zero_at = epoch_ms();
    java.count_down();
    REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
    const long long took = epoch_ms() - zero_at;
    MESSAGE("Redisson's countDown to zero (PUBLISH) -> rlock latch await exits: " << took << " ms");
    CHECK(took < 1000);
    CHECK(parse_json(waiter.out()).at("reached") == true);
    CHECK(listener.next() == "0");
    CHECK(redis.cmd_int({"EXISTS", "build"}) == 0);
  }
  // Nothing of rlock's is left beside what Redisson itself keeps (nothing, at zero) but
  // the reply records of its own requests, under its prefix.
  for (const auto& key : redis.cmd({"KEYS", "*"}))
    CHECK(key.rfind("rlock:redisson:{build}:reply:", 0) == 0);
}

TEST_CASE("redisson latch: Java's SPUBLISH wakes rlock, rlock's zero reaches SSUBSCRIBE") {
  RedisServer redis;
  JavaLatch java{redis, "shard"};
  ChannelListener sharded(redis, channel_of("shard"), "SSUBSCRIBE");
  REQUIRE(java.try_set_count(1, "spublish") == "1\n");
  CHECK(sharded.next() == "1");
  auto waiter = awaiting(redis, "shard");
  const long long zero_at = epoch_ms();
  java.count_down("spublish");
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  MESSAGE("Redisson's countDown (SPUBLISH) -> rlock latch await exits: " << epoch_ms() - zero_at
                                                                         << " ms");
  CHECK(sharded.next() == "0");
  REQUIRE(rlock(redis, in_layout({"latch", "set", "shard", "1"})).status == 0);
  CHECK(sharded.next() == "1");
  REQUIRE(rlock(redis, in_layout({"latch", "count-down", "shard"})).status == 0);
  CHECK(sharded.next() == "0");
  // After rlock's zero the name is free: Java starts the next round.
  CHECK(java.try_set_count(2) == "1\n");
}

TEST_CASE("redisson latch: a missing latch is reached, as Java's await takes it") {
  RedisServer redis;
  auto r = rlock(redis, in_layout({"latch", "await", "none", "--wait", "5s"}));
  CHECK(r.status == 0);
  CHECK(parse_json(r.out).at("reached") == true);
  auto down = rlock(redis, in_layout({"latch", "count-down", "none"}));
  CHECK(down.status == 75);
  CHECK(line_count(down.err) == 1);
  CHECK(down.err.find("Redisson deletes it") != std::string::npos);
  CHECK(redis.cmd_int({"EXISTS", "none"}) == 0);
  // Java's delete publishes "1" (its NEW_COUNT message), not "0": an rlock waiter of a
  // deleted latch wakes on it all the same and finds it reached.
  JavaLatch java{redis, "gone"};
  REQUIRE(java.try_set_count(4) == "1\n");
  auto waiter = awaiting(redis, "gone");
  CHECK(java.remove() == "1\n");
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson latch: a waiter SIGSTOPped while the latch opens exits 0 once resumed") {
  RedisServer redis;
  JavaLatch java{redis, "paused"};
  REQUIRE(java.try_set_count(1) == "1\n");
  auto waiter = awaiting(redis, "paused");
  waiter.kill(SIGSTOP);
  java.count_down();
  CHECK(redis.cmd_int({"EXISTS", "paused"}) == 0);
  waiter.kill(SIGCONT);
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);

  // As Java's await does, a woken waiter reads the count: one that Java set anew before the
  // waiter ran again waits for the new round (the wake-up Redisson itself misses too).
  REQUIRE(java.try_set_count(1) == "1\n");
  waiter = awaiting(redis, "paused");
  waiter.kill(SIGSTOP);
  java.count_down();
  REQUIRE(java.try_set_count(1) == "1\n");
  waiter.kill(SIGCONT);
  CHECK(waiter.wait(deadline(500ms)) == std::nullopt);
  java.count_down();
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson latch: a lost reply counts down once; a frozen server keeps the waiter") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  JavaLatch java{redis, "lr"};
  ChannelListener listener(redis, channel_of("lr"));
  // The scripts are cached first: the lost request is the script itself.
  REQUIRE(rlock(redis, in_layout({"latch", "status", "lr"})).status == 0);
  REQUIRE(java.try_set_count(3) == "1\n");
  CHECK(listener.next() == "1");
  auto via = [&](std::vector<std::string> args) {
    args = in_layout(args);
    args.insert(args.begin(), {"--url", proxy.url()});
    return rlock_raw(args, {});
  };
  proxy.lose("{lr}", LossyProxy::Loss::kReply);
  auto down = via({"latch", "count-down", "lr", "--by", "2"});
  INFO("stderr: " << down.err);
  REQUIRE(down.status == 0);
  CHECK(parse_json(down.out).at("count") == 1);
  CHECK(java.count() == 1);
  proxy.lose("{lr}", LossyProxy::Loss::kReply);
  auto last = via({"latch", "count-down", "lr"});
  REQUIRE(last.status == 0);
  CHECK(parse_json(last.out).at("reached") == true);
  CHECK(listener.next() == "0");
  CHECK(redis.cmd_int({"EXISTS", "lr"}) == 0);
  CHECK(proxy.losses() == 2);

  // A waiter whose server froze meanwhile wakes on Java's zero once it runs again.
  REQUIRE(java.try_set_count(1) == "1\n");
  CHECK(listener.next() == "1");
  auto waiter = awaiting(redis, "lr");
  redis.freeze();
  CHECK(waiter.wait(deadline(1500ms)) == std::nullopt);
  redis.thaw();
  java.count_down();
  REQUIRE(waiter.wait(deadline(15s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson latch: inspect shows a latch only Java created") {
  RedisServer redis;
  JavaLatch java{redis, "java-only"};
  REQUIRE(java.try_set_count(7) == "1\n");
  auto all = parse_json(rlock(redis, in_layout({"inspect", "--type", "latch"})).out);
  REQUIRE(all.size() == 1);
  CHECK(all[0].at("name") == "java-only");
  CHECK(all[0].at("key") == "java-only");
  CHECK(all[0].at("count") == 7);
  CHECK(all[0].at("ttl_ms") == -1);
  // A bare integer cannot be told from an RSemaphore or RAtomicLong: only asked for by type.
  CHECK(parse_json(rlock(redis, in_layout({"inspect"})).out).empty());
  // unlock --force is a lock's: it names what the key holds and leaves it.
  auto forced = rlock(redis, in_layout({"unlock", "--force", "java-only"}));
  CHECK(forced.status == 65);
  CHECK(line_count(forced.err) == 1);
  CHECK(java.count() == 7);
}

TEST_CASE("redisson latch: ids, expiries, braces and other types are refused, nothing written") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> refused = {
      {"latch", "count-down", "x", "--id", "shard-1"},
      {"latch", "set", "x", "2", "--expire", "1h"},
      {"latch", "set", "a{b}", "2"},
      {"latch", "await", "a}b", "--wait", "1s"},
      {"delay-push", "q", "--delay", "1s", "x"},
      {"delay-pop", "q"}};
  for (const auto& args : refused) {
    CAPTURE(args[1]);
    auto r = rlock(redis, in_layout(args));
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  CHECK(rlock(redis, in_layout({"delay-push", "q", "--delay", "1s", "x"})).err.find("Kryo5") !=
        std::string::npos);
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
  // A hash under the name is not a latch: rlock leaves it as it is.
  redis.cmd({"HSET", "h", "f", "1"});
  auto r = rlock(redis, in_layout({"latch", "set", "h", "3"}));
  CHECK(r.status == 65);
  CHECK(line_count(r.err) == 1);
  CHECK(redis.cmd_str({"HGET", "h", "f"}) == "1");
}

}  // namespace
}  // namespace rlock::test
