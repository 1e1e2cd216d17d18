// `rlock latch`: set, count-down (--by, --id), await on pub/sub, status; bad input changes
// nothing; the library's read for inspect.
#include "prim/latch.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>

#include "harness.hpp"
#include "lib_util.hpp"
#include "prim/key_layout.hpp"

namespace rlock::test {
namespace {

std::string latch_key(const std::string& name) { return "rlock:latch:{" + name + "}"; }
std::string ids_key(const std::string& name) { return latch_key(name) + ":ids"; }
std::string latch_channel(const std::string& name) { return "rlock:chan:{" + name + "}:latch"; }

json ok_json(const RedisServer& redis, const std::vector<std::string>& args) {
  auto r = rlock(redis, args);
  INFO("args: " << json(args).dump() << " stderr: " << r.err);
  REQUIRE(r.status == 0);
  return parse_json(r.out);
}

json count_down(const RedisServer& redis, const std::string& name,
                std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"latch", "count-down", name};
  args.insert(args.end(), extra.begin(), extra.end());
  return ok_json(redis, args);
}

TEST_CASE("latch: set, count-down, status and await print the documented JSON") {
  RedisServer redis;
  CHECK(ok_json(redis, {"latch", "set", "L", "3"}) ==
        json::object({{"name", "L"}, {"count", 3}, {"ttl_ms", -1}, {"previous", nullptr}}));
  CHECK(redis.cmd_str({"GET", latch_key("L")}) == "3");
  CHECK(redis.cmd_int({"PTTL", latch_key("L")}) == -1);

  CHECK(count_down(redis, "L") == json::object({{"name", "L"},
                                                {"count", 2},
                                                {"applied", 1},
                                                {"reached", false},
                                                {"id", nullptr},
                                                {"repeated", false}}));
  CHECK(count_down(redis, "L", {"--id", "shard-1"}) == json::object({{"name", "L"},
                                                                     {"count", 1},
                                                                     {"applied", 1},
                                                                     {"reached", false},
                                                                     {"id", "shard-1"},
                                                                     {"repeated", false}}));
  CHECK(ok_json(redis, {"latch", "status", "L"}) == json::object({{"name", "L"},
                                                                  {"exists", true},
                                                                  {"count", 1},
                                                                  {"ids", {"shard-1"}},
                                                                  {"ids_total", 1},
                                                                  {"ttl_ms", -1},
                                                                  {"next", nullptr}}));
  auto r = rlock(redis, {"latch", "await", "L", "-n"});
  CHECK(r.status == 75);
  CHECK(parse_json(r.out) ==
        json::object({{"name", "L"}, {"reached", false}, {"exists", true}, {"count", 1}}));

  // The last count-down reaches 0: the latch stays as a count-0 marker for 24h.
  CHECK(count_down(redis, "L", {"--id", "shard-2"})["reached"] == true);
  CHECK(redis.cmd_str({"GET", latch_key("L")}) == "0");
  long long pttl = redis.cmd_int({"PTTL", latch_key("L")});
  CHECK(pttl > 86000000);
  CHECK(pttl <= 86400000);
  CHECK(redis.cmd_int({"PTTL", ids_key("L")}) <= 86400000);
  CHECK(redis.cmd_int({"PTTL", ids_key("L")}) > 86000000);
  auto status = ok_json(redis, {"latch", "status", "L"});
  CHECK(status["count"] == 0);
  CHECK(status["ids"] == json::array({"shard-1", "shard-2"}));
  CHECK(status["ttl_ms"].get<long long>() > 86000000);
  CHECK(ok_json(redis, {"latch", "await", "L"}) ==
        json::object({{"name", "L"}, {"reached", true}}));
  CHECK(ok_json(redis, {"latch", "await", "L", "--wait", "10s"})["reached"] == true);

  // Never set: status says so; await -n exits 75 telling it apart from a live latch.
  CHECK(ok_json(redis, {"latch", "status", "none"}) == json::object({{"name", "none"},
                                                                     {"exists", false},
                                                                     {"count", nullptr},
                                                                     {"ids", json::array()},
                                                                     {"ids_total", 0},
                                                                     {"ttl_ms", nullptr},
                                                                     {"next", nullptr}}));
  r = rlock(redis, {"latch", "await", "none", "-n"});
  CHECK(r.status == 75);
  CHECK(
      parse_json(r.out) ==
      json::object({{"name", "none"}, {"reached", false}, {"exists", false}, {"count", nullptr}}));

  // -q: nothing printed, the exit code tells.
  r = rlock(redis, {"-q", "latch", "set", "Q", "1"});
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  r = rlock(redis, {"-q", "latch", "await", "Q", "-n", "-E", "9"});
  CHECK(r.status == 9);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
}

TEST_CASE("latch: 6 waiters are released within 1s of reaching zero, none before") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "six", "3"}).status == 0);
  std::vector<Spawned> waiters;
  for (int i = 0; i < 6; ++i)
    waiters.push_back(spawn_rlock(redis, {"latch", "await", "six", "--wait", "30s"}));
  REQUIRE(poll_until([&] { return subscribers(redis, latch_channel("six")) == 6; }, 20s));
  count_down(redis, "six");
  count_down(redis, "six", {"--by", "1", "--id", "a"});
  for (auto& w : waiters) {
    INFO("stderr: " << w.err());
    REQUIRE(w.running());
  }
  auto last = Clock::now();
  CHECK(count_down(redis, "six")["reached"] == true);
  REQUIRE(Spawned::wait_all(
      {&waiters[0], &waiters[1], &waiters[2], &waiters[3], &waiters[4], &waiters[5]},
      deadline(10s)));
  for (auto& w : waiters) {
    INFO("stderr: " << w.err());
    CHECK(w.wait(deadline(1s)).value_or(kStillRunning) == 0);
    CHECK(parse_json(w.out()) == json::object({{"name", "six"}, {"reached", true}}));
    CHECK(ms_between(last, w.exit_time()) <= 1000);
  }
}

TEST_CASE("latch: a waiter on a latch not set yet waits for it to be set and reach zero") {
  RedisServer redis;
  auto waiter = spawn_rlock(redis, {"latch", "await", "later", "--wait", "30s"});
  REQUIRE(poll_until([&] { return subscribers(redis, latch_channel("later")) == 1; }, 10s));
  REQUIRE(rlock(redis, {"latch", "set", "later", "1"}).status == 0);
  CHECK(waiter.running());
  count_down(redis, "later");
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("latch: a retried --id counts once, also when the retries race") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "ci", "4"}).status == 0);
  CHECK(count_down(redis, "ci", {"--id", "shard-1"})["count"] == 3);
  for (int i = 0; i < 3; ++i) {
    auto j = count_down(redis, "ci", {"--id", "shard-1", "--by", "2"});
    CHECK(j["count"] == 3);
    CHECK(j["applied"] == 0);
    CHECK(j["repeated"] == true);
  }
  std::vector<Spawned> racers;
  for (int i = 0; i < 5; ++i)
    racers.push_back(spawn_rlock(redis, {"latch", "count-down", "ci", "--id", "shard-2"}));
  int applied = 0;
  for (auto& r : racers) {
    REQUIRE(r.wait(deadline(20s)).value_or(kStillRunning) == 0);
    applied += parse_json(r.out())["applied"].get<int>();
  }
  CHECK(applied == 1);
  CHECK(redis.cmd_str({"GET", latch_key("ci")}) == "2");
  CHECK(redis.cmd_int({"SCARD", ids_key("ci")}) == 2);

  // A new round (--force while live) forgets the ids of the last one.
  auto j = ok_json(redis, {"latch", "set", "ci", "2", "--force"});
  CHECK(j["previous"] == 2);
  CHECK(redis.cmd_int({"EXISTS", ids_key("ci")}) == 0);
  CHECK(count_down(redis, "ci", {"--id", "shard-1"})["applied"] == 1);
}

TEST_CASE("latch: the count never goes below zero") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "z", "2"}).status == 0);
  auto j = count_down(redis, "z", {"--by", "5"});
  CHECK(j["applied"] == 2);
  CHECK(j["count"] == 0);
  CHECK(j["reached"] == true);
  j = count_down(redis, "z");
  CHECK(j["applied"] == 0);
  CHECK(j["count"] == 0);
  CHECK(j["reached"] == false);
  j = count_down(redis, "z", {"--id", "late"});
  CHECK(j["applied"] == 0);
  CHECK(redis.cmd_str({"GET", latch_key("z")}) == "0");
}

TEST_CASE("latch: set refuses a live latch unless --force; --expire covers all its keys") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "s", "3"}).status == 0);
  count_down(redis, "s", {"--id", "a"});
  auto before = snapshot(redis);
  auto r = rlock(redis, {"latch", "set", "s", "5"});
  CHECK(r.status == 75);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("count 2") != std::string::npos);
  CHECK(snapshot(redis) == before);

  auto j = ok_json(redis, {"latch", "set", "s", "5", "--force", "--expire", "90s"});
  CHECK(j == json::object({{"name", "s"}, {"count", 5}, {"ttl_ms", 90000}, {"previous", 2}}));
  long long pttl = redis.cmd_int({"PTTL", latch_key("s")});
  CHECK(pttl > 80000);
  CHECK(pttl <= 90000);
  count_down(redis, "s", {"--id", "b"});
  long long ids_ttl = redis.cmd_int({"PTTL", ids_key("s")});
  CHECK(ids_ttl > 80000);
  CHECK(ids_ttl <= 90000);
  // Reaching zero keeps the latch's own expiry.
  count_down(redis, "s", {"--by", "9"});
  CHECK(redis.cmd_int({"PTTL", latch_key("s")}) <= 90000);

  // A reached latch (count 0) may be set again without --force.
  j = ok_json(redis, {"latch", "set", "s", "1"});
  CHECK(j["previous"] == 0);
  CHECK(redis.cmd_int({"PTTL", latch_key("s")}) == -1);
  CHECK(redis.cmd_int({"EXISTS", ids_key("s")}) == 0);

  // The expiry runs on the server: the whole latch goes, its ids with its count. The
  // count-down must come before the expiry: on a CPU busy enough to delay it past one,
  // the round starts again with a longer expiry (it is what is checked, not a wait).
  bool counted = false;
  for (const char* expire : {"300ms", "3s", "30s"}) {
    CAPTURE(expire);
    REQUIRE(rlock(redis, {"latch", "set", "short", "2", "--expire", expire, "--force"}).status ==
            0);
    auto r = rlock(redis, {"latch", "count-down", "short", "--id", "x"});
    if (r.status == 75 && r.err.find("does not exist") != std::string::npos) continue;
    REQUIRE(r.status == 0);
    // Both expiry times at once (a read-only script is atomic).
    auto both = redis.cmd({"EVAL",
                           "return {redis.call('PEXPIRETIME', KEYS[1]), "
                           "redis.call('PEXPIRETIME', KEYS[2])}",
                           "2", latch_key("short"), ids_key("short")});
    REQUIRE(both.size() == 2);
    if (std::stoll(both[0]) < 0) continue;  // expired since the count-down
    // The same expiry, but for the time the script took between PTTL and PEXPIRE (Redis
    // 7.0 does not freeze its clock inside a script; a busy CPU can stretch it to ms).
    const long long ids_later = std::stoll(both[1]) - std::stoll(both[0]);
    CHECK(ids_later >= 0);
    CHECK(ids_later < 1000);
    counted = true;
    break;
  }
  REQUIRE(counted);
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"EXISTS", latch_key("short")}) == 0 &&
               redis.cmd_int({"EXISTS", ids_key("short")}) == 0;
      },
      40s));
}

TEST_CASE("latch: await -n and a --wait that runs out exit 75 (or -E)") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "n", "1"}).status == 0);
  auto r = rlock(redis, {"latch", "await", "n", "-n"});
  CHECK(r.status == 75);
  CHECK(r.elapsed < 2000ms);
  r = rlock(redis, {"latch", "await", "n"});  // not waiting is the default
  CHECK(r.status == 75);
  r = rlock(redis, {"latch", "await", "n", "-n", "-E", "3"});
  CHECK(r.status == 3);
  r = rlock(redis, {"latch", "await", "n", "-n", "-E", "010"});  // decimal, not octal 8
  CHECK(r.status == 10);
  r = rlock(redis, {"latch", "await", "n", "--wait", "300ms"});
  CHECK(r.status == 75);
  CHECK(r.elapsed >= 300ms);
  CHECK(r.elapsed < 5000ms);
  CHECK(parse_json(r.out)["count"] == 1);
  CHECK(redis.cmd_str({"GET", latch_key("n")}) == "1");

  // -w inf waits until a stop signal ends it.
  auto waiter = spawn_rlock(redis, {"latch", "await", "n", "-w", "inf"});
  REQUIRE(poll_until([&] { return subscribers(redis, latch_channel("n")) == 1; }, 10s));
  waiter.kill(SIGTERM);
  CHECK(waiter.wait(deadline(5s)).value_or(kStillRunning) == 128 + SIGTERM);
  CHECK(redis.cmd_str({"GET", latch_key("n")}) == "1");
}

TEST_CASE("latch: a waiter survives its subscriber connection being killed and still wakes") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "k", "1"}).status == 0);
  auto waiter = spawn_rlock(redis, {"latch", "await", "k", "--wait", "30s"});
  REQUIRE(poll_until([&] { return subscribers(redis, latch_channel("k")) == 1; }, 10s));
  redis.cmd({"CLIENT", "KILL", "TYPE", "pubsub"});
  REQUIRE(poll_until([&] { return subscribers(redis, latch_channel("k")) == 1; }, 10s));
  CHECK(waiter.running());
  auto last = Clock::now();
  count_down(redis, "k");
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << waiter.err());
  CHECK(ms_between(last, waiter.exit_time()) <= 1000);
}

TEST_CASE("latch: bad input is one stderr line with its code and changes nothing") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"latch", "set", "live", "3"}).status == 0);
  count_down(redis, "live", {"--id", "a"});
  redis.cmd({"HSET", latch_key("hash"), "owner", "1"});  // a lock-like hash where a latch goes
  redis.cmd({"SET", latch_key("badids"), "2"});
  redis.cmd({"SET", ids_key("badids"), "not-a-set"});
  redis.cmd({"SET", latch_key("junk"), "abc"});
  redis.cmd({"SET", "rlock:lock:{str}", "3"});  // a latch-like string where a lock goes
  // Counts no rlock stores (beyond 2^53 - 1): malformed, never wrapped or rounded.
  redis.cmd({"SET", latch_key("huge"), "99999999999999999999999"});
  redis.cmd({"SET", latch_key("over"), "9007199254740992"});
  // The count-down's reply record expires on its own within a minute, which the cases
  // below can take on a busy machine: it is not what they check.
  for (const auto& key : redis.cmd({"KEYS", "rlock:req:*"})) redis.cmd({"DEL", key});

  struct Case {
    std::vector<std::string> args;
    int status;
  };
  const Case cases[] = {
      {{"latch", "set", "new", "0"}, 64},
      {{"latch", "set", "new", "-1"}, 64},
      {{"latch", "set", "new", "x"}, 64},
      {{"latch", "set", "new", "1.5"}, 64},
      {{"latch", "set", "new", "9007199254740992"}, 64},
      {{"latch", "set", "new", "2", "--expire", "soon"}, 64},
      {{"latch", "set", "new", "2", "--expire", "0"}, 64},
      {{"latch", "set", "", "2"}, 64},
      {{"latch", "set", "live", "0", "--force"}, 64},
      {{"latch", "count-down", "live", "--by", "0"}, 64},
      {{"latch", "count-down", "live", "--by", "-2"}, 64},
      {{"latch", "count-down", "live", "--by", "two"}, 64},
      {{"latch", "count-down", "live", "--id", ""}, 64},
      {{"latch", "count-down", "live", "--id", "a\tb"}, 64},
      {{"latch", "count-down", "never-set"}, 75},
      {{"latch", "count-down", "never-set", "--id", "a"}, 75},
      {{"latch", "await", "live", "--wait", "forever"}, 64},
      {{"latch", "set", "live", "4"}, 75},
      {{"latch", "set", "hash", "2", "--force"}, 65},
      {{"latch", "count-down", "hash"}, 65},
      {{"latch", "await", "hash", "--wait", "1s"}, 65},
      {{"latch", "status", "hash"}, 65},
      {{"latch", "count-down", "badids", "--id", "a"}, 65},
      {{"latch", "set", "badids", "1", "--force"}, 65},
      {{"latch", "count-down", "junk"}, 65},
      {{"latch", "set", "junk", "1", "--force"}, 65},
      {{"latch", "status", "junk"}, 65},
      {{"latch", "status", "huge"}, 65},
      {{"latch", "count-down", "huge"}, 65},
      {{"latch", "count-down", "over", "--by", "2"}, 65},
      {{"latch", "set", "huge", "1", "--force"}, 65},
      {{"latch", "await", "huge", "-n"}, 65},
      {{"latch", "set", "new", "99999999999999999999999"}, 64},
      {{"latch", "count-down", "live", "--by", "99999999999999999999999"}, 64},
      {{"latch", "status", "live", "--limit", "0"}, 64},
      {{"latch", "status", "live", "--limit", "99999999999999999999999"}, 64},
      {{"latch", "status", "live", "--after", "-1"}, 64},
      {{"latch", "status", "live", "--limit", "0x10"}, 64},
      {{"latch", "await", "live", "-n", "-E", "0x10"}, 64},
      {{"lock", "str", "--owner", "o"}, 65},
      {{"latch"}, 64},
      {{"latch", "frobnicate", "x"}, 64},
  };
  const auto before = snapshot(redis);
  for (const auto& c : cases) {
    CAPTURE(json(c.args).dump());
    auto r = rlock(redis, c.args);
    INFO("stderr: " << r.err);
    CHECK(r.status == c.status);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(snapshot(redis) == before);
  }
}

// The rights the latch scripts need beyond the lock's minimal ACL (see ACL in rlock(1)).
const std::string kLatchAcl =
    "user rl on >rlpw resetkeys ~rlock:* resetchannels &rlock:* -@all +evalsha +eval +ssubscribe "
    "+sunsubscribe +ping +type +get +pttl +set +decrby +pexpire +del +sadd +sismember +scard "
    "+sscan "
    "+exists +spublish";

TEST_CASE("latch: the documented rights suffice; an ACL missing one changes nothing (77)") {
  RedisServer redis;
  {
    as_new_server_with_user(redis, kLatchAcl);
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    CHECK(rlock_raw({"latch", "set", "a", "2"}, as_rl).status == 0);
    auto waiter = Spawned({rlock_binary(), "latch", "await", "a", "--wait", "20s"}, as_rl);
    REQUIRE(poll_until([&] { return subscribers(redis, latch_channel("a")) == 1; }, 10s));
    CHECK(rlock_raw({"latch", "count-down", "a", "--id", "x"}, as_rl).status == 0);
    CHECK(rlock_raw({"latch", "count-down", "a"}, as_rl).status == 0);
    CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
    CHECK(rlock_raw({"latch", "status", "a"}, as_rl).status == 0);
  }
  for (const char* missing : {"decrby", "sadd", "spublish", "pexpire", "set", "del"}) {
    CAPTURE(missing);
    as_new_server_with_user(redis, kLatchAcl + " -" + missing);
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    REQUIRE(rlock(redis, {"latch", "set", "p", "1"}).status == 0);
    const auto before = snapshot(redis);
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"latch", "count-down", "p", "--id", "i"},
                                               {"latch", "set", "p", "3", "--force"},
                                               {"latch", "set", "fresh", "3"}}) {
      CAPTURE(json(args).dump());
      auto r = rlock_raw(args, as_rl);
      CHECK(r.status == 77);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("NOPERM") != std::string::npos);
    }
    CHECK(snapshot(redis) == before);
  }
}

TEST_CASE("latch: help names the subcommands, with examples") {
  auto r = rlock_raw({"help", "latch"});
  CHECK(r.status == 0);
  for (const char* word : {"set", "count-down", "await", "status", "Examples:"}) {
    CAPTURE(word);
    CHECK(r.out.find(word) != std::string::npos);
  }
  CHECK(rlock_raw({"latch", "--help"}).out == r.out);
  CHECK(rlock_raw({"--help"}).out.find("latch") != std::string::npos);
}

TEST_CASE("latch library: keys, read for inspect, await through the shared waiting loop") {
  prim::KeyLayout layout("rlock:");
  CHECK(layout.latch_key("a{b}") == "rlock:latch:{a%7Bb%7D}");
  CHECK(layout.latch_ids_key("a") == "rlock:latch:{a}:ids");
  CHECK(layout.latch_channel("a") == "rlock:chan:{a}:latch");

  RedisServer server;
  redis::Topology topology = topology_for(server);
  prim::Latch latch(topology, layout, "lib");
  CHECK_FALSE(prim::read_latch(topology, layout, "lib").exists);
  auto s = latch.set(2, Millis(60000), false);
  CHECK(s.set);
  CHECK_FALSE(s.previous.has_value());
  CHECK_FALSE(latch.set(5, Millis(0), false).set);
  CHECK(latch.count_down(1, "p1").applied == 1);
  CHECK(latch.count_down(1, "p1").outcome == prim::LatchCountDown::Outcome::kRepeated);
  auto st = prim::read_latch(topology, layout, "lib");
  CHECK(st.exists);
  CHECK(st.count == 1);
  CHECK(st.ids == std::vector<std::string>{"p1"});
  CHECK(st.ttl_ms > 0);
  CHECK(st.ttl_ms <= 60000);
  CHECK_FALSE(latch.await(SteadyClock::now() + Millis(100)));
  auto down = latch.count_down(3);
  CHECK(down.applied == 1);
  CHECK(down.reached);
  CHECK(latch.await(SteadyClock::now()));
}

}  // namespace
}  // namespace rlock::test
