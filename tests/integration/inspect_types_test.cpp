// `rlock inspect` over every object type: one schema with a "type" field, --type, waiters
// in queue order with how long each waited, the table for all types, and a listing of
// 100,000 objects in bounded memory.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <map>

#include "harness.hpp"

namespace rlock::test {
namespace {

std::string latch_key(std::string_view name) { return "rlock:latch:{" + std::string(name) + "}"; }

// inspect's JSON array by "type:name"; FAILs on a duplicate.
std::map<std::string, json> by_type_name(const json& entries) {
  REQUIRE(entries.is_array());
  std::map<std::string, json> out;
  for (const auto& e : entries) {
    auto [it, fresh] =
        out.emplace(e.at("type").get<std::string>() + ":" + e.at("name").get<std::string>(), e);
    CHECK_MESSAGE(fresh, "listed twice: " << e);
  }
  return out;
}

TEST_CASE("inspect: locks and latches in one schema, waiters in queue order, --type, table") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "deploy", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto first = spawn_rlock(redis, {"lock", "--wait", "60s", "deploy", "--owner", "first"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("deploy") + ":waiters"}) == 1;
      },
      10s));
  ::usleep(300'000);
  auto second = spawn_rlock(redis, {"exec", "--wait", "60s", "deploy", "--", "true"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("deploy") + ":waiters"}) == 2;
      },
      10s));
  REQUIRE(rlock(redis, {"latch", "set", "shards", "3", "--expire", "1h"}).status == 0);
  REQUIRE(rlock(redis, {"latch", "count-down", "shards", "--id", "s1"}).status == 0);
  REQUIRE(rlock(redis, {"latch", "count-down", "shards", "--id", "s2"}).status == 0);
  redis.cmd({"HSET", latch_key("not-a-latch"), "f", "v"});  // another program's hash

  SUBCASE("JSON: every type, one schema") {
    auto r = rlock(redis, {"inspect"});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    auto all = by_type_name(parse_json(r.out));
    REQUIRE(all.size() == 3);

    const auto& lock = all.at("lock:deploy");
    CHECK(lock["mode"] == "exclusive");
    REQUIRE(lock["holders"].size() == 1);
    CHECK(lock["holders"][0]["owner"] == "holder");
    CHECK(lock["holders"][0]["lease_ms"].get<long long>() > 30000);
    CHECK(lock["waiters_total"] == 2);
    REQUIRE(lock["waiters"].size() == 2);
    CHECK(lock["waiters"][0]["owner"] == "first");
    CHECK(lock["waiters"][0]["kind"] == "lock");
    CHECK(lock["waiters"][1]["kind"] == "exec");
    const long long waited0 = lock["waiters"][0]["waited_ms"];
    const long long waited1 = lock["waiters"][1]["waited_ms"];
    CHECK(waited1 >= 0);
    CHECK(waited0 >= waited1 + 250);  // the first arrived >= 300 ms earlier
    CHECK(waited0 < 60000);
    CHECK(lock["grant"] == nullptr);

    const auto& latch = all.at("latch:shards");
    CHECK(keys_of(latch) ==
          json::array({"count", "ids", "ids_total", "key", "name", "ttl_ms", "type"}));
    CHECK(latch["key"] == latch_key("shards"));
    CHECK(latch["count"] == 1);
    CHECK(latch["ids"] == json::array({"s1", "s2"}));
    CHECK(latch["ids_total"] == 2);
    CHECK(latch["ttl_ms"].get<long long>() > 3500000);

    const auto& bad = all.at("latch:not-a-latch");
    CHECK(bad["count"] == nullptr);
    CHECK(bad.contains("error"));
  }

  SUBCASE("--type filters; an unknown type is a usage error") {
    auto locks = rlock(redis, {"inspect", "--type", "lock"});
    REQUIRE(locks.status == 0);
    auto l = by_type_name(parse_json(locks.out));
    CHECK(l.size() == 1);
    CHECK(l.count("lock:deploy") == 1);
    auto latches = rlock(redis, {"inspect", "--type", "latch", "sha*"});
    REQUIRE(latches.status == 0);
    auto t = by_type_name(parse_json(latches.out));
    CHECK(t.size() == 1);
    CHECK(t.count("latch:shards") == 1);
    auto both = rlock(redis, {"inspect", "--type", "latch,lock"});
    REQUIRE(both.status == 0);
    CHECK(parse_json(both.out).size() == 3);
    for (const std::string bad : {"locks", "lock,", "delay"}) {
      CAPTURE(bad);
      auto r = rlock(redis, {"inspect", "--type", bad});
      CHECK(r.status == 64);
      CHECK(r.out.empty());
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("lock, sem, latch") != std::string::npos);
    }
  }

  SUBCASE("table: one header, one row per object of every type") {
    auto r = rlock(redis, {"--format", "table", "inspect"});
    INFO("stdout: " << r.out);
    REQUIRE(r.status == 0);
    CHECK(line_count(r.out) == 4);
    CHECK(r.out.rfind("TYPE ", 0) == 0);
    CHECK(r.out.find("\nlock   deploy  ") != std::string::npos);
    CHECK(r.out.find("holder (x1)") != std::string::npos);
    CHECK(r.out.find("\nlatch  shards  ") != std::string::npos);
    CHECK(r.out.find("count 1, 2 ids") != std::string::npos);
  }

  SUBCASE("a grant not claimed yet is shown with its waiter") {
    redis.cmd({"SET", lock_key("deploy") + ":grant", "30000:exec:abc123:host:1:ff"});
    auto all = by_type_name(parse_json(rlock(redis, {"inspect", "--type", "lock"}).out));
    CHECK(all.at("lock:deploy")["grant"] ==
          json::object({{"owner", "host:1:ff"}, {"kind", "exec"}, {"wait_id", "abc123"}}));
    redis.cmd({"DEL", lock_key("deploy") + ":grant"});
  }

  first.kill(SIGTERM);
  second.kill(SIGTERM);
  CHECK(first.wait(deadline(10s)).value_or(kStillRunning) == 128 + SIGTERM);
  CHECK(second.wait(deadline(10s)).value_or(kStillRunning) == 128 + SIGTERM);
}

// Populates with bench/populate_inspect.lua: half locks (some with waiters), half latches.
TEST_CASE("inspect streams 100,000 objects as one JSON array in under 16 MiB") {
  RedisServer redis;
  const std::string script = read_file(RLOCK_SOURCE_DIR "/bench/populate_inspect.lua");
  const auto start = Clock::now();
  REQUIRE(redis.cmd_int({"EVAL", script, "0", "rlock:", "0", "100000"}) == 100000);
  MESSAGE("populated 100,000 objects in " << ms_between(start) << " ms");

  // GNU time reports the peak RSS of rlock alone (scripts/install-deps.sh installs it).
  REQUIRE_MESSAGE(::access("/usr/bin/time", X_OK) == 0,
                  "/usr/bin/time is missing: run scripts/install-deps.sh time");
  TempDir dir;
  const std::string rss_file = dir.path().string() + "/rss";
  std::vector<std::string> argv = {"/usr/bin/time", "-f", "%M", "-o", rss_file};
  for (auto& a : rlock_argv(redis, {"inspect"})) argv.push_back(a);
  auto r = run(argv, {}, 120s);
  REQUIRE(r.status == 0);
  MESSAGE("inspect took " << r.elapsed.count() << " ms");
  auto listed = parse_json(r.out);
  REQUIRE(listed.size() == 100000);
  long long locks = 0;
  for (const auto& e : listed) locks += e.at("type") == "lock" ? 1 : 0;
  CHECK(locks == 50000);
  const long long kib = std::stoll(read_file(rss_file));
  MESSAGE("peak RSS " << kib << " KiB");
  CHECK(kib < 16 * 1024);
}

TEST_CASE("inspect: semaphores with their permits, holders, leases and queue; --type sem") {
  RedisServer redis;
  auto taken = rlock(redis, {"sem", "acquire", "pool", "--permits", "3", "--count", "2", "--owner",
                             "a", "--lease", "40s"});
  REQUIRE(taken.status == 0);
  REQUIRE(rlock(redis, {"lock", "other", "--owner", "o"}).status == 0);
  auto r = rlock(redis, {"inspect", "--type", "sem"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto listed = parse_json(r.out);
  REQUIRE(listed.size() == 1);
  const auto& s = listed[0];
  CHECK(s.at("type") == "sem");
  CHECK(s.at("name") == "pool");
  CHECK(s.at("capacity") == 3);
  CHECK(s.at("permits_total") == 2);
  REQUIRE(s.at("permits").size() == 2);
  for (const auto& p : s.at("permits")) {
    CHECK(p.at("owner") == "a");
    CHECK(p.at("lease_ms").get<long long>() > 30'000);
    CHECK(p.at("lease_ms").get<long long>() <= 40'000);
  }
  auto all = parse_json(rlock(redis, {"inspect"}).out);
  CHECK(all.size() == 2);
  auto t = rlock(redis, {"inspect", "--format", "table", "--type", "sem"});
  CHECK(t.out.find("2/3 permits") != std::string::npos);
}

}  // namespace
}  // namespace rlock::test
