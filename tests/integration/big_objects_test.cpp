// One object of any size: inspect, `sem status` and `latch status` read and print it in
// bounded memory (a summary, or a page with a cursor to the next), and every page lists
// what it says. Peak RSS is measured by /usr/bin/time (GNU time).
#include <doctest/doctest.h>
#include <unistd.h>

#include <set>

#include "harness.hpp"

namespace rlock::test {
namespace {

// A far lease end (server ms): the populated holds do not expire during the test.
const std::string kFarMs = "99999999999999";

// Runs rlock under GNU time; returns its result and sets `kib` to its peak RSS.
RunResult run_measured(const RedisServer& redis, const std::vector<std::string>& args,
                       long long& kib) {
  REQUIRE_MESSAGE(::access("/usr/bin/time", X_OK) == 0,
                  "GNU time is needed (apt-get install time)");
  TempDir dir;
  const std::string rss_file = dir.path().string() + "/rss";
  std::vector<std::string> argv = {"/usr/bin/time", "-f", "%M", "-o", rss_file};
  for (auto& a : rlock_argv(redis, args)) argv.push_back(a);
  auto r = run(argv, {}, 120s);
  kib = std::stoll(read_file(rss_file));
  MESSAGE(json(args).dump() << ": peak RSS " << kib << " KiB, " << r.elapsed.count() << " ms, "
                            << r.out.size() << " bytes out");
  return r;
}

// Populates in chunks of one script each (a server's reply and arguments stay small).
void populate(const RedisServer& redis, const std::string& script, const std::string& key,
              long long n, const std::string& extra = "") {
  for (long long from = 1; from <= n; from += 10000) {
    redis.cmd({"EVAL", script, "1", key, std::to_string(from),
               std::to_string(std::min(n, from + 9999)), extra});
  }
}

const char* const kPermits = R"(
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  redis.call('ZADD', KEYS[1], ARGV[3], 'p.' .. i)
  redis.call('HSET', KEYS[1] .. ':holders', 'p.' .. i, 'owner-' .. i)
end)";

const char* const kIds = R"(
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call('SADD', KEYS[1], 'id-' .. i) end)";

const char* const kReaders = R"(
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  redis.call('HSET', KEYS[1], 'reader-' .. i, '1:' .. ARGV[3])
end)";

TEST_CASE("a semaphore with 200,000 permits: inspect and sem status in under 16 MiB") {
  RedisServer redis;
  redis.cmd({"HSET", "rlock:sem:{big}:cfg", "capacity", "1000000"});
  populate(redis, kPermits, "rlock:sem:{big}", 200000, kFarMs);

  long long kib = 0;
  auto r = run_measured(redis, {"inspect"}, kib);
  REQUIRE(r.status == 0);
  CHECK(kib <= 16 * 1024);
  auto listed = parse_json(r.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].at("permits").size() == 100);
  CHECK(listed[0].at("permits_total") == 200000);
  CHECK(listed[0].at("capacity") == 1000000);

  r = run_measured(redis, {"sem", "status", "big"}, kib);
  REQUIRE(r.status == 0);
  CHECK(kib <= 16 * 1024);
  auto st = parse_json(r.out);
  CHECK(st.at("in_use") == 200000);
  CHECK(st.at("free") == 800000);
  CHECK(st.at("permits").size() == 1000);
  CHECK(st.at("next") == "1000:-1");
}

TEST_CASE("sem status pages: --limit and --after list every permit once") {
  RedisServer redis;
  redis.cmd({"HSET", "rlock:sem:{pg}:cfg", "capacity", "5000"});
  populate(redis, kPermits, "rlock:sem:{pg}", 2500, kFarMs);
  std::set<std::string> seen;
  std::vector<std::string> args = {"sem", "status", "pg", "--limit", "1000"};
  int pages = 0;
  for (json next = nullptr;; ++pages) {
    auto page_args = args;
    if (!next.is_null()) {
      page_args.push_back("--after");
      page_args.push_back(next.get<std::string>());
    }
    auto r = rlock(redis, page_args);
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    auto page = parse_json(r.out);
    CHECK(page.at("in_use") == 2500);
    CHECK(page.at("permits").size() <= 1000);
    for (const auto& p : page.at("permits")) {
      CHECK(seen.insert(p.at("id").get<std::string>()).second);
      CHECK(p.at("owner") == "owner-" + p.at("id").get<std::string>().substr(2));
    }
    next = page.at("next");
    if (next.is_null()) break;
    REQUIRE(pages < 10);
  }
  CHECK(pages == 2);
  CHECK(seen.size() == 2500);
  for (const std::string bad : {"x", "1", "1:", ":1", "1:2:3", "-2:0"}) {
    auto r = rlock(redis, {"sem", "status", "pg", "--after", bad});
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  for (const std::string bad : {"0", "10001"}) {
    auto r = rlock(redis, {"sem", "status", "pg", "--limit", bad});
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
}

TEST_CASE("a latch with 300,000 ids: latch status and inspect in under 16 MiB") {
  RedisServer redis;
  redis.cmd({"SET", "rlock:latch:{big}", "5"});
  populate(redis, kIds, "rlock:latch:{big}:ids", 300000);

  long long kib = 0;
  auto r = run_measured(redis, {"latch", "status", "big"}, kib);
  REQUIRE(r.status == 0);
  CHECK(kib <= 16 * 1024);
  auto st = parse_json(r.out);
  CHECK(st.at("count") == 5);
  CHECK(st.at("ids_total") == 300000);
  CHECK(st.at("ids").size() >= 1000);
  CHECK(st.at("ids").size() <= 2000);
  CHECK(st.at("next").is_string());

  r = run_measured(redis, {"inspect"}, kib);
  REQUIRE(r.status == 0);
  CHECK(kib <= 16 * 1024);
  CHECK(parse_json(r.out).at(0).at("ids_total") == 300000);
}

TEST_CASE("latch status pages: --limit and --after list every id") {
  RedisServer redis;
  redis.cmd({"SET", "rlock:latch:{pg}", "1"});
  populate(redis, kIds, "rlock:latch:{pg}:ids", 3000);
  std::set<std::string> seen;
  int pages = 0;
  for (json next = nullptr;; ++pages) {
    std::vector<std::string> args = {"latch", "status", "pg", "--limit", "500"};
    if (!next.is_null()) {
      args.push_back("--after");
      args.push_back(next.get<std::string>());
    }
    auto r = rlock(redis, args);
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    auto page = parse_json(r.out);
    CHECK(page.at("ids_total") == 3000);
    CHECK(page.at("ids").size() <= 1000);
    for (const auto& id : page.at("ids")) seen.insert(id.get<std::string>());
    next = page.at("next");
    if (next.is_null()) break;
    REQUIRE(pages < 100);
  }
  CHECK(seen.size() == 3000);
  CHECK(pages >= 3);
  auto r = rlock(redis, {"latch", "status", "pg", "--after", "x1"});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
}

TEST_CASE("a lock with 200,000 reader entries: inspect in under 16 MiB, with the total") {
  RedisServer redis;
  populate(redis, kReaders, "rlock:lock-readers:{big}", 200000, kFarMs);
  long long kib = 0;
  for (const std::string format : {"json", "table"}) {
    auto r = run_measured(redis, {"--format", format, "inspect"}, kib);
    REQUIRE(r.status == 0);
    CHECK(kib <= 16 * 1024);
    if (format == "table") {
      CHECK(r.out.find("(200000 holders)") != std::string::npos);
      continue;
    }
    auto listed = parse_json(r.out);
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].at("mode") == "shared");
    CHECK(listed[0].at("holders").size() <= 100);
    CHECK(listed[0].at("holders_total") == 200000);
    CHECK(listed[0].at("ttl_ms").get<long long>() > 1000000);
  }
}

}  // namespace
}  // namespace rlock::test
