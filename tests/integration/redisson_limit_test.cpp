// `limit --layout redisson` against Redisson's own RRateLimiter scripts, run verbatim
// (tests/redisson/redisson_limit_*.lua) through EVAL with the arguments RedissonRateLimiter
// passes (the Java side's clock is this host's, as a Java service's would be): one rate
// shared in both directions, each side's trySetRate and setRate seen by the other,
// PER_CLIENT separation, what a Java clock ahead of the server does, inspect and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "harness.hpp"
#include "lossy_proxy.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test {
namespace {

using redisson::epoch_ms;
using redisson::redisson_eval;

// The five keys RedissonRateLimiter passes, for the Java instance `client`.
std::vector<std::string> limiter_keys(const std::string& name, const std::string& client) {
  const std::string tag = "{" + name + "}";
  return {name, tag + ":value", tag + ":value:" + client, tag + ":permits",
          tag + ":permits:" + client};
}

// trySetRate(type, rate, interval) of a Java client: 1 when it stored the config.
long long java_try_set_rate(const RedisServer& redis, const std::string& name, int type,
                            long long rate, long long interval_ms) {
  auto r =
      redisson_eval(redis, "redisson_limit_try_set_rate.lua", {name},
                    {std::to_string(rate), std::to_string(interval_ms), std::to_string(type), "0"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return std::stoll(r.out);
}

// tryAcquire(permits) of the Java instance `client` whose clock reads `now_ms`: nullopt when
// it got them, else the delay Redisson would sleep.
std::optional<long long> java_acquire(const RedisServer& redis, const std::string& name,
                                      long long permits, const std::string& client = "J1",
                                      std::optional<long long> now_ms = std::nullopt) {
  static int n = 0;
  char random[17];
  snprintf(random, sizeof random, "java%012d", ++n);  // generateIdArray(): 16 bytes
  auto r =
      redisson_eval(redis, "redisson_limit_try_acquire.lua", limiter_keys(name, client),
                    {std::to_string(permits), std::to_string(now_ms.value_or(epoch_ms())), random});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  REQUIRE_MESSAGE(r.out.find("ERR") == std::string::npos, r.out);
  if (r.out == "\n" || r.out.empty()) return std::nullopt;
  return std::stoll(r.out);
}

std::vector<std::string> redisson(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson"});
  return args;
}

json limit(const RedisServer& redis, std::vector<std::string> args, int status) {
  args.insert(args.begin(), "limit");
  auto r = rlock(redis, redisson(args));
  INFO("args: " << json(args).dump() << "\nstderr: " << r.err);
  REQUIRE(r.status == status);
  return r.out.empty() ? json() : parse_json(r.out);
}

// The most permits inside any window [t, t + width) of the grants (time ms, permits).
long long most_in_window(std::vector<std::pair<long long, long long>> grants, long long width) {
  std::sort(grants.begin(), grants.end());
  long long most = 0;
  for (size_t i = 0; i < grants.size(); ++i) {
    long long sum = 0;
    for (size_t j = i; j < grants.size() && grants[j].first < grants[i].first + width; ++j)
      sum += grants[j].second;
    most = std::max(most, sum);
  }
  return most;
}

// What both sides were granted: (time stamped, permits) each, and how many calls of each.
struct Turns {
  std::vector<std::pair<long long, long long>> grants;
  long long by_rlock = 0, by_java = 0;
};

// rlock and Java take turns for `ms` on one limiter (rate per interval, created by whoever
// comes first), Java taking 1 or 2 permits a call.
Turns take_turns(const RedisServer& redis, const std::string& name, bool java_first, long long rate,
                 long long interval, long long ms) {
  Turns t;
  const std::vector<std::string> args = {
      "--layout", "redisson",           "limit", name,
      "--rate",   std::to_string(rate), "--per", std::to_string(interval) + "ms"};
  if (java_first) REQUIRE(java_try_set_rate(redis, name, 0, rate, interval) == 1);
  const long long end = epoch_ms() + ms;
  for (int round = 0; epoch_ms() < end; ++round) {
    auto r = rlock(redis, args);
    REQUIRE_MESSAGE((r.status == 0 || r.status == 75), r.err);
    auto j = parse_json(r.out);
    if (r.status == 0) {
      t.grants.emplace_back(j.at("now_ms").get<long long>(), 1);
      ++t.by_rlock;
    }
    const long long permits = round % 3 == 2 ? 2 : 1;
    const long long at = epoch_ms();
    if (round == 0 && !java_first) CHECK(java_try_set_rate(redis, name, 0, rate, interval) == 0);
    if (!java_acquire(redis, name, permits, "J1", at)) {
      t.grants.emplace_back(at, permits);
      ++t.by_java;
    }
  }
  return t;
}

TEST_CASE("redisson limit: rlock and Redisson's tryAcquire share one rate, both directions") {
  RedisServer redis;
  for (bool java_first : {true, false}) {
    CAPTURE(java_first);
    const std::string name = java_first ? "shared-j" : "shared-r";
    auto t = take_turns(redis, name, java_first, 5, 500, 3000);
    long long total = 0;
    for (const auto& g : t.grants) total += g.second;
    MESSAGE("granted " << total << " permits in 3s at 5/500ms: " << t.by_rlock << " rlock calls, "
                       << t.by_java << " Java calls");
    CHECK(most_in_window(t.grants, 500) <= 5);
    CHECK(total >= 10);  // both sides are served, not only refused
    CHECK(t.by_rlock > 0);
    CHECK(t.by_java > 0);
    CHECK(redis.cmd_str({"HGET", name, "rate"}) == "5");
  }
}

TEST_CASE("redisson limit: trySetRate and setRate by either side are seen by the other") {
  RedisServer redis;
  // Java's config first: rlock with another rate is refused, with the same one it counts.
  REQUIRE(java_try_set_rate(redis, "j", 0, 7, 60000) == 1);
  auto r = rlock(redis, redisson({"limit", "j", "--rate", "5", "--per", "1m"}));
  CHECK(r.status == 65);
  CHECK(r.err.find("configured with --rate 7 --per 1m; given --rate 5 --per 1m") !=
        std::string::npos);
  CHECK(!java_acquire(redis, "j", 3));
  CHECK(limit(redis, {"j", "--rate", "7", "--per", "1m"}, 0).at("remaining") == 3);
  // rlock's config first: Java's trySetRate keeps it and Java runs under it.
  limit(redis, {"r", "--rate", "4", "--per", "1m"}, 0);
  CHECK(redis.cmd({"HGETALL", "r"}) == std::vector<std::string>{"rate", "4", "interval", "60000",
                                                                "keepAliveTime", "0", "type", "0"});
  CHECK(java_try_set_rate(redis, "r", 0, 9, 1000) == 0);
  CHECK(!java_acquire(redis, "r", 2));
  CHECK(!java_acquire(redis, "r", 1));
  auto delay = java_acquire(redis, "r", 1);
  REQUIRE(delay);
  CHECK(*delay > 59000);
  CHECK(limit(redis, {"r", "--rate", "4", "--per", "1m"}, 75).at("remaining") == 0);
  // --reconfigure keeps the permits taken (setRate with keepState): 4 taken, rate 6, 2 left.
  CHECK(limit(redis, {"r", "--rate", "6", "--per", "1m", "--reconfigure"}, 0).at("remaining") == 1);
  CHECK(!java_acquire(redis, "r", 1));
  CHECK(java_acquire(redis, "r", 1));
  // Java's setRate starts afresh: rlock sees the new config and its full window.
  auto set = redisson_eval(redis, "redisson_limit_set_rate.lua", limiter_keys("r", "J1"),
                           {"10", "60000", "0", "0"});
  REQUIRE(set.status == 0);
  CHECK(rlock(redis, redisson({"limit", "r", "--rate", "6", "--per", "1m"})).status == 65);
  CHECK(limit(redis, {"r", "--rate", "10", "--per", "1m"}, 0).at("remaining") == 9);
}

TEST_CASE("redisson limit: PER_CLIENT keeps each client's permits apart, as Redisson does") {
  RedisServer redis;
  REQUIRE(java_try_set_rate(redis, "pc", 1, 2, 60000) == 1);
  CHECK(!java_acquire(redis, "pc", 2, "J1"));
  CHECK(java_acquire(redis, "pc", 1, "J1"));
  const std::vector<std::string> as_j2 = {"pc", "--rate", "2", "--per", "1m", "--client", "J2"};
  CHECK(limit(redis, as_j2, 0).at("remaining") == 1);
  CHECK(limit(redis, as_j2, 0).at("remaining") == 0);
  CHECK(limit(redis, as_j2, 75).at("retry_after_ms") > 59000);
  CHECK(java_acquire(redis, "pc", 1, "J2"));  // rlock's --client J2 is Java's J2
  CHECK(limit(redis, {"pc", "--rate", "2", "--per", "1m", "--client", "J1"}, 75).at("remaining") ==
        0);
  CHECK(!java_acquire(redis, "pc", 1, "J3"));
  CHECK(limit(redis, {"pc", "--rate", "2", "--per", "1m", "--client", "J4"}, 0).at("remaining") ==
        1);
  CHECK(redis.cmd_str({"GET", "{pc}:value:J2"}) == "0");
  CHECK(redis.cmd_int({"ZCARD", "{pc}:permits:J2"}) == 2);
  CHECK(redis.cmd_int({"EXISTS", "{pc}:value", "{pc}:permits"}) == 0);
  // Without --client the config (PER_CLIENT) is another one.
  CHECK(rlock(redis, redisson({"limit", "pc", "--rate", "2", "--per", "1m"})).status == 65);
  // --reset with --client removes what delete() of that Java instance removes.
  auto reset = parse_json(rlock(redis, redisson({"limit", "pc", "--reset", "--client", "J2"})).out);
  CHECK(reset == json{{"name", "pc"}, {"reset", true}, {"client_buckets", 1}});
  CHECK(redis.cmd_int({"EXISTS", "pc", "{pc}:value:J2", "{pc}:permits:J2"}) == 0);
  CHECK(redis.cmd_int({"EXISTS", "{pc}:value:J1"}) == 1);
  auto gone = redisson_eval(redis, "redisson_limit_try_acquire.lua", limiter_keys("pc", "J1"),
                            {"1", std::to_string(epoch_ms()), "0123456789abcdef"});
  CHECK((gone.out + gone.err).find("RateLimiter is not initialized") != std::string::npos);
}

TEST_CASE(
    "redisson limit: permits in Redisson's encoding on the server's clock; a Java clock "
    "ahead keeps its permits longer") {
  RedisServer redis;
  const long long before = epoch_ms();
  limit(redis, {"enc", "--rate", "5", "--per", "1s", "--cost", "3"}, 0);
  const long long after = epoch_ms();
  auto log = redis.cmd({"ZRANGE", "{enc}:permits", "0", "-1", "WITHSCORES"});
  REQUIRE(log.size() == 2);
  const std::string& m = log[0];
  REQUIRE(m.size() == 21);  // struct.pack('Bc0I', 16, <16 random bytes>, 3)
  CHECK(static_cast<unsigned char>(m[0]) == 16);
  CHECK(m.substr(17) == std::string("\x03\x00\x00\x00", 4));
  CHECK(std::stoll(log[1]) >= before - 50);
  CHECK(std::stoll(log[1]) <= after + 50);
  // Redisson's own scripts read rlock's permits.
  auto left = redisson_eval(redis, "redisson_limit_available_permits.lua",
                            limiter_keys("enc", "J1"), {std::to_string(epoch_ms())});
  CHECK(left.out == "2\n");
  CHECK(java_acquire(redis, "enc", 3));

  // A Java client 5s ahead of the server: its permits leave the window 5s late for rlock.
  REQUIRE(java_try_set_rate(redis, "skew", 0, 2, 1000) == 1);
  CHECK(!java_acquire(redis, "skew", 2, "J1", epoch_ms() + 5000));
  auto j = limit(redis, {"skew", "--rate", "2", "--per", "1s"}, 75);
  MESSAGE("rlock beside a Java clock 5s ahead: retry in " << j.at("retry_after_ms") << " ms");
  CHECK(j.at("retry_after_ms") > 5000);  // beyond the 1s window: the 5s of skew
  CHECK(j.at("retry_after_ms") <= 6100);
}

TEST_CASE("redisson limit: a call whose reply is lost is repeated and takes its permits once") {
  RedisServer redis({.test_topology = false});  // the proxy is a standalone server's
  LossyProxy proxy(redis.port());
  const std::vector<std::string> call = {"--url", proxy.url(), "--layout", "redisson", "limit"};
  auto in = [&](const std::string& name) {
    std::vector<std::string> a = call;
    a.insert(a.end(), {name, "--rate", "2", "--per", "1h"});
    return a;
  };
  REQUIRE(rlock_raw(in("warm")).status == 0);  // the script cached: the lost request is it
  proxy.lose("{lost}", LossyProxy::Loss::kReply);
  auto r = rlock_raw(in("lost"));
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out).at("remaining") == 1);
  CHECK(redis.cmd_int({"ZCARD", "{lost}:permits"}) == 1);
  CHECK(redis.cmd_str({"GET", "{lost}:value"}) == "1");
}

TEST_CASE("redisson limit: --wait passes once Java's permits leave the window") {
  RedisServer redis;
  // A window of 3s: the first decision comes well before it ends, also on a loaded host.
  REQUIRE(java_try_set_rate(redis, "w", 0, 3, 3000) == 1);
  const long long taken = epoch_ms();
  REQUIRE(!java_acquire(redis, "w", 3, "J1", taken));
  auto r =
      rlock(redis, redisson({"-v", "limit", "w", "--rate", "3", "--per", "3s", "--wait", "10s"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find("retrying in") != std::string::npos);  // it slept, then passed
  const long long passed = parse_json(r.out).at("now_ms").get<long long>();
  MESSAGE("rlock --wait passed " << passed - (taken + 3000) << " ms after Java's permits aged out");
  CHECK(passed >= taken + 3000);
  CHECK(passed - (taken + 3000) < 250);  // measured 3-15 ms
}

TEST_CASE(
    "redisson limit: inspect shows an RRateLimiter only Java created; unlock --force "
    "and lock leave it alone") {
  RedisServer redis;
  REQUIRE(java_try_set_rate(redis, "jv", 0, 5, 60000) == 1);
  REQUIRE(!java_acquire(redis, "jv", 2));
  REQUIRE(java_try_set_rate(redis, "jpc", 1, 3, 1000) == 1);
  auto rows = parse_json(rlock(redis, redisson({"inspect"})).out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == json::parse(R"({"type":"limiter","name":"jpc","key":"jpc","rate":3,
    "per_ms":1000,"burst":3,"client_rate":null,"per_client":true,"tokens":null,
    "client_buckets":null,"ttl_ms":-1,"keep_alive_ms":0})"));
  CHECK(rows[1].at("type") == "limiter");
  CHECK(rows[1].at("tokens") == 3);
  CHECK(rows[1].at("per_client") == false);
  auto table = rlock(redis, redisson({"inspect", "--format", "table", "jv"}));
  CHECK(table.out.find("5/1m0s Redisson OVERALL, 3 left") != std::string::npos);
  CHECK(parse_json(rlock(redis, redisson({"inspect", "--type", "lock"})).out).empty());
  const auto before = snapshot(redis);
  for (const char* object : {"lock", "fair-lock", "read-write-lock"}) {
    CAPTURE(object);
    auto r = rlock(redis, redisson({"--redisson-object", object, "unlock", "--force", "jv"}));
    CHECK(r.status == 65);
    CHECK(r.err.find("holds a Redisson-RRateLimiter, not a lock") != std::string::npos);
    CHECK(snapshot(redis) == before);
  }
  for (const char* object : {"lock", "fair-lock", "read-write-lock"}) {
    CAPTURE(object);
    CHECK(rlock(redis, redisson({"--redisson-object", object, "lock", "jv"})).status == 65);
    CHECK(rlock(redis,
                redisson({"--redisson-object", object, "exec", "--wait", "1s", "jv", "--", "true"}))
              .status == 65);
  }
  CHECK(rlock(redis, redisson({"lock", "--shared", "jv"})).status == 65);
  CHECK(snapshot(redis) == before);
}

TEST_CASE(
    "redisson limit: bad input is one stderr line, exit 64 (65 for another object), "
    "nothing written") {
  RedisServer redis;
  limit(redis, {"live", "--rate", "3", "--per", "1m"}, 0);
  redis.cmd({"HSET", "alock", "00000000-0000-4000-8000-000000000001:1", "1"});
  redis.cmd({"SET", "astring", "x"});
  const std::vector<std::string> ok = {"--rate", "3", "--per", "1m"};
  auto with = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> a = {"--layout", "redisson", "limit", name};
    a.insert(a.end(), ok.begin(), ok.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::vector<std::pair<std::vector<std::string>, int>> cases = {
      {with("live", {"--burst", "2"}), 64},
      {with("live", {"--burst", "1"}), 64},
      {with("live", {"--client", "a", "--client-rate", "1"}), 64},
      {with("live", {"--cost", "4"}), 64},
      {with("br{ace}", {}), 64},
      {{"--layout", "redisson", "--redisson-object", "lock", "limit", "live", "--rate", "3",
        "--per", "1m"},
       64},
      {{"--layout", "redisson", "limit", "live", "--reset", "--rate", "3"}, 64},
      {{"--layout", "redisson", "--redisson-object", "semaphore", "limit", "live", "--reset"}, 64},
      {{"--layout", "redisson", "limit", "a{b}", "--reset"}, 64},
      {with("live", {"--peek", "--reconfigure"}), 64},
      {with("alock", {}), 65},
      {with("alock", {"--peek"}), 65},
      {{"--layout", "redisson", "limit", "alock", "--reset"}, 65},
      {with("astring", {}), 65},
  };
  const auto before = snapshot(redis);
  for (const auto& [args, status] : cases) {
    CAPTURE(json(args).dump());
    auto r = rlock(redis, args);
    INFO("stderr: " << r.err);
    CHECK(r.status == status);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(snapshot(redis) == before);
  }
}

}  // namespace
}  // namespace rlock::test
