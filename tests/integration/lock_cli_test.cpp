// `rlock lock` / `rlock unlock`: JSON results, re-entry, busy answers, waiting, fencing.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

const std::string kAlice = "alice-host:101:a1";
const std::string kBob = "bob-host:202:b2";

json holder(const std::string& owner, int count) {
  return json::object({{"owner", owner}, {"count", count}});
}

// The fence token stored for `name`, as rlock must report it.
long long stored_fence(const RedisServer& redis, const std::string& name) {
  return redis.cmd_int({"GET", fence_key(name)});
}

// Runs `lock NAME --owner OWNER [extra...]`, requires success, returns the fence.
long long lock_ok(const RedisServer& redis, const std::string& name, const std::string& owner,
                  std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"lock", name, "--owner", owner};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = rlock(redis, args);
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto j = parse_json(r.out);
  REQUIRE(j.at("acquired") == true);
  return j.at("fence").get<long long>();
}

TEST_CASE("lock: acquire, re-enter, busy, unlock and force print the documented JSON") {
  RedisServer redis;

  // Fresh acquisition.
  auto r = rlock(redis, {"lock", "L", "--owner", kAlice});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const long long fence = stored_fence(redis, "L");
  CHECK(fence > 0);
  CHECK(parse_json(r.out) == json::object({{"name", "L"},
                                           {"owner", kAlice},
                                           {"acquired", true},
                                           {"count", 1},
                                           {"fence", fence},
                                           {"lease_ms", 30000}}));
  CHECK(hash_of(redis, lock_key("L")) == json::object({{kAlice, "1"}}));
  long long pttl = redis.cmd_int({"PTTL", lock_key("L")});
  CHECK(pttl > 25000);
  CHECK(pttl <= 30000);
  CHECK(redis.cmd_int({"PTTL", fence_key("L")}) == -1);  // the token never expires

  // Re-entry by the same owner: count 2, same fence, lease extended again.
  redis.cmd({"PEXPIRE", lock_key("L"), "5000"});
  r = rlock(redis, {"lock", "L", "--owner", kAlice});
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out) == json::object({{"name", "L"},
                                           {"owner", kAlice},
                                           {"acquired", true},
                                           {"count", 2},
                                           {"fence", fence},
                                           {"lease_ms", 30000}}));
  CHECK(stored_fence(redis, "L") == fence);
  CHECK(hash_of(redis, lock_key("L")) == json::object({{kAlice, "2"}}));
  pttl = redis.cmd_int({"PTTL", lock_key("L")});
  CHECK(pttl > 25000);
  CHECK(pttl <= 30000);

  // Another owner, no wait: busy, exit 75, or the -E code.
  r = rlock(redis, {"lock", "L", "--owner", kBob});
  CHECK(r.status == 75);
  auto busy = parse_json(r.out);
  CHECK(keys_of(busy) == json::array({"acquired", "holders", "holders_total", "name", "ttl_ms"}));
  CHECK(busy["name"] == "L");
  CHECK(busy["acquired"] == false);
  CHECK(busy["holders"] == json::array({holder(kAlice, 2)}));
  CHECK(busy["holders_total"] == 1);
  CHECK(busy["ttl_ms"].is_number_integer());
  CHECK(busy["ttl_ms"].get<long long>() > 0);
  CHECK(busy["ttl_ms"].get<long long>() <= 30000);

  r = rlock(redis, {"lock", "L", "--owner", kBob, "-E", "3"});
  CHECK(r.status == 3);
  r = rlock(redis, {"lock", "L", "--owner", kBob, "--conflict-exit-code", "9"});
  CHECK(r.status == 9);
  CHECK(hash_of(redis, lock_key("L")) == json::object({{kAlice, "2"}}));

  // Unlock by a non-holder changes nothing.
  r = rlock(redis, {"unlock", "L", "--owner", kBob});
  CHECK(r.status == 75);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find(kAlice) != std::string::npos);
  CHECK(hash_of(redis, lock_key("L")) == json::object({{kAlice, "2"}}));
  CHECK(stored_fence(redis, "L") == fence);

  // The holder unlocks twice: decrement, then release.
  r = rlock(redis, {"unlock", "L", "--owner", kAlice});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) ==
        json::object({{"name", "L"}, {"owner", kAlice}, {"released", false}, {"count", 1}}));
  CHECK(hash_of(redis, lock_key("L")) == json::object({{kAlice, "1"}}));
  r = rlock(redis, {"unlock", "L", "--owner", kAlice});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) ==
        json::object({{"name", "L"}, {"owner", kAlice}, {"released", true}, {"count", 0}}));
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
  CHECK(stored_fence(redis, "L") == fence);

  // Unlock of a free lock.
  r = rlock(redis, {"unlock", "L", "--owner", kAlice});
  CHECK(r.status == 75);
  CHECK(r.err == "rlock: lock 'L' is not held; nothing to unlock\n");

  // --force releases whoever holds it, and reports them.
  lock_ok(redis, "L", kBob);
  r = rlock(redis, {"unlock", "L", "--force"});
  CHECK(r.status == 0);
  CHECK(
      parse_json(r.out) ==
      json::object({{"name", "L"}, {"forced", true}, {"holders", json::array({holder(kBob, 1)})}}));
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
  r = rlock(redis, {"unlock", "L", "--force"});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) ==
        json::object({{"name", "L"}, {"forced", true}, {"holders", json::array()}}));

  // Unlock with no owner anywhere (no flag, no RLOCK_OWNER, no config) is a usage error.
  lock_ok(redis, "L", kBob);
  r = rlock(redis, {"unlock", "L"});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(hash_of(redis, lock_key("L")) == json::object({{kBob, "1"}}));
}

// Calls of `command` the server ran since its statistics were reset (scripts' calls too).
long long calls_of(const RedisServer& redis, const std::string& command) {
  const std::string info = redis.cmd_str({"INFO", "commandstats"});
  const std::string stat = "cmdstat_" + command + ":calls=";
  const auto at = info.find(stat);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + stat.size()));
}

// The common case costs the server least: on a quorum it is paid on every member.
TEST_CASE("lock: a fresh hold of a free name reads only its token and its request record") {
  RedisServer redis(RedisOptions{.test_topology = false});
  lock_ok(redis, "F", kAlice);  // the token exists from here on, and the scripts are cached
  for (const std::string wait : {"0s", "5s"}) {  // a try, and the first attempt of a wait
    REQUIRE(rlock(redis, {"unlock", "F", "--force"}).status == 0);
    redis.cmd({"CONFIG", "RESETSTAT"});
    INFO("--wait " << wait);
    const long long fence = lock_ok(redis, "F", kBob, {"--wait", wait});
    CHECK(calls_of(redis, "exists") == 1);  // none of the other keys of the lock is there
    CHECK(calls_of(redis, "get") == 2);     // the token and the request record, once each
    CHECK(calls_of(redis, "type") == 0);    // only a GET that fails looks a type up
    CHECK(calls_of(redis, "zrem") == 0);    // no queue to leave
    CHECK(fence == stored_fence(redis, "F"));
  }
}

TEST_CASE("lock: --lease, generated owner, RLOCK_OWNER and --quiet") {
  RedisServer redis;

  auto r = rlock(redis, {"lock", "leased", "--owner", "o", "--lease", "1500ms"});
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out)["lease_ms"] == 1500);
  long long pttl = redis.cmd_int({"PTTL", lock_key("leased")});
  CHECK(pttl > 0);
  CHECK(pttl <= 1500);

  // Without any owner, lock makes up host:pid:random and prints it.
  r = rlock(redis, {"lock", "auto"});
  REQUIRE(r.status == 0);
  auto j = parse_json(r.out);
  const std::string owner = j.at("owner").get<std::string>();
  CHECK(std::count(owner.begin(), owner.end(), ':') >= 2);
  CHECK(hash_of(redis, lock_key("auto")) == json::object({{owner, "1"}}));

  // RLOCK_OWNER supplies the owner for lock and unlock.
  r = rlock(redis, {"lock", "env"}, {{"RLOCK_OWNER", "from-env"}});
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out)["owner"] == "from-env");
  r = rlock(redis, {"unlock", "env"}, {{"RLOCK_OWNER", "from-env"}});
  CHECK(r.status == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("env")}) == 0);

  // -q: no JSON, no notice; the exit code still tells.
  r = rlock(redis, {"-q", "lock", "quiet", "--owner", "a"});
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
  r = rlock(redis, {"lock", "quiet", "--owner", "b", "--quiet"});
  CHECK(r.status == 75);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
}

TEST_CASE("lock: the fencing token only grows, even after FLUSHALL or a restart") {
  RedisServer redis;

  const long long f1 = lock_ok(redis, "F", "a");
  REQUIRE(rlock(redis, {"unlock", "F", "--owner", "a"}).status == 0);
  const long long f1b = lock_ok(redis, "F", "a");
  CHECK(f1b > f1);
  CHECK(stored_fence(redis, "F") == f1b);

  redis.cmd({"FLUSHALL"});
  const long long f2 = lock_ok(redis, "F", "a");
  CHECK(f2 > f1b);

  redis.restart();
  REQUIRE(redis.cmd_int({"EXISTS", fence_key("F")}) == 0);
  const long long f3 = lock_ok(redis, "F", "b");
  CHECK(f3 > f2);

  // A stored token above the server clock: the next one is exactly stored + 1, and is
  // stored as an integer string (no 5e+15 from Lua's number formatting).
  REQUIRE(rlock(redis, {"unlock", "F", "--owner", "b"}).status == 0);
  redis.cmd({"SET", fence_key("F"), "5000000000000000"});
  const long long f4 = lock_ok(redis, "F", "c");
  CHECK(f4 == 5000000000000001LL);
  CHECK(redis.cmd_str({"GET", fence_key("F")}) == "5000000000000001");
}

TEST_CASE("lock: a waiter is woken by the release, long before the lease ends") {
  RedisServer redis;
  lock_ok(redis, "W", "holder-h1", {"--lease", "60s"});

  auto waiter = spawn_rlock(redis, {"-v", "lock", "--wait", "30s", "W", "--owner", "waiter-w1"});
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel("W")) == 1; }, 10s));

  // -v explains on stderr what it waits for: a line naming the holder.
  bool named_holder = false;
  for (auto until = deadline(5s); !named_holder;) {
    auto line = waiter.read_err_line(until);
    if (!line) break;
    named_holder = line->find("holder-h1") != std::string::npos;
  }
  CHECK_MESSAGE(named_holder, "stderr: " << waiter.err());

  const auto released_at = Clock::now();
  REQUIRE(rlock(redis, {"unlock", "W", "--owner", "holder-h1"}).status == 0);
  auto status = waiter.wait(deadline(10s));
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  CHECK(ms_between(released_at, waiter.exit_time()) < 2000);
  auto j = parse_json(waiter.out());
  CHECK(j["acquired"] == true);
  CHECK(j["owner"] == "waiter-w1");
  CHECK(hash_of(redis, lock_key("W")) == json::object({{"waiter-w1", "1"}}));
}

TEST_CASE("lock: a waiter is woken when the holder's lease runs out") {
  RedisServer redis;
  const auto start = Clock::now();
  lock_ok(redis, "X", "gone-holder", {"--lease", "1s"});  // never unlocks

  auto r = rlock(redis, {"lock", "--wait", "20s", "X", "--owner", "next"});
  const long long waited = ms_between(start);
  CHECK(r.status == 0);
  CHECK(parse_json(r.out)["owner"] == "next");
  CHECK(waited >= 800);
  CHECK(waited < 4000);
}

TEST_CASE("lock: --wait runs out with 75 (or -E) and the busy JSON") {
  RedisServer redis;
  lock_ok(redis, "T", "h", {"--lease", "60s"});
  auto r = rlock(redis, {"lock", "--wait", "500ms", "T", "--owner", "w"});
  CHECK(r.status == 75);
  CHECK(r.elapsed >= 400ms);
  CHECK(r.elapsed < 5s);
  auto j = parse_json(r.out);
  CHECK(j["acquired"] == false);
  CHECK(j["holders"] == json::array({holder("h", 1)}));
  r = rlock(redis, {"lock", "--wait", "300ms", "-E", "42", "T", "--owner", "w"});
  CHECK(r.status == 42);
  // The waiters' subscriptions end with them (the server notices the closed sockets).
  CHECK(poll_until([&] { return subscribers(redis, lock_channel("T")) == 0; }, 5s));
}

TEST_CASE("lock: scripts are reloaded after SCRIPT FLUSH (NOSCRIPT fallback)") {
  RedisServer redis;
  lock_ok(redis, "S", "a");
  REQUIRE(rlock(redis, {"unlock", "S", "--owner", "a"}).status == 0);

  redis.cmd({"SCRIPT", "FLUSH"});
  lock_ok(redis, "S", "b");
  redis.cmd({"SCRIPT", "FLUSH"});
  auto r = rlock(redis, {"unlock", "S", "--owner", "b"});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out)["released"] == true);
  redis.cmd({"SCRIPT", "FLUSH"});
  r = rlock(redis, {"exec", "S", "--", "true"});
  CHECK(r.status == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("S")}) == 0);
}

}  // namespace
}  // namespace rlock::test
