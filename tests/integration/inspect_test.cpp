// `rlock inspect`: JSON entries, pattern filter, table format, SCAN (never KEYS).
#include <doctest/doctest.h>
#include <signal.h>

#include <map>
#include <sstream>

#include "harness.hpp"

namespace rlock::test {
namespace {

// inspect's JSON array by lock name; FAILs on a duplicate name.
std::map<std::string, json> by_name(const json& entries) {
  REQUIRE(entries.is_array());
  std::map<std::string, json> out;
  for (const auto& e : entries) {
    REQUIRE(e.contains("name"));
    auto [it, fresh] = out.emplace(e["name"].get<std::string>(), e);
    CHECK_MESSAGE(fresh, "listed twice: " << e);
  }
  return out;
}

json names_of(const std::map<std::string, json>& entries) {
  json names = json::array();
  for (const auto& [name, entry] : entries) names.push_back(name);
  return names;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST_CASE("inspect: entries, waiters, pattern, table; on a server without KEYS") {
  RedisServer redis(RedisOptions{.config = {R"(rename-command KEYS "")"}});
  REQUIRE_THROWS_AS(redis.cmd({"KEYS", "*"}), RedisError);

  REQUIRE(rlock(redis, {"lock", "deploy-prod", "--owner", "o1"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "deploy-staging", "--owner", "o2", "--lease", "60s"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "deploy-staging", "--owner", "o2", "--lease", "60s"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "other", "--owner", "o3"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "freed", "--owner", "o4"}).status == 0);
  REQUIRE(rlock(redis, {"unlock", "freed", "--owner", "o4"}).status == 0);
  // Keys under the prefix that are no lock, and one outside it.
  redis.cmd({"SET", lock_key("junk"), "x"});
  redis.cmd({"SET", "rlock:unrelated", "y"});
  redis.cmd({"SET", "elsewhere", "z"});

  auto waiter = spawn_rlock(redis, {"lock", "--wait", "60s", "deploy-prod", "--owner", "w"});
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel("deploy-prod")) == 1; }, 10s));

  SUBCASE("all locks as JSON") {
    auto r = rlock(redis, {"inspect"});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    auto entries = by_name(parse_json(r.out));
    // The string at rlock:lock:{junk} may be skipped, or reported as such (an "error"
    // saying what is wrong, no holders); nothing else appears.
    if (entries.count("junk") != 0) {
      const auto& junk = entries["junk"];
      CHECK(junk["key"] == lock_key("junk"));
      CHECK(junk["holders"] == json::array());
      CHECK(junk.contains("error"));
      entries.erase("junk");
    }
    CHECK(names_of(entries) == json::array({"deploy-prod", "deploy-staging", "other"}));

    auto& prod = entries["deploy-prod"];
    CHECK(keys_of(prod) == json::array({"fence", "grant", "holders", "holders_total", "key", "mode",
                                        "name", "ttl_ms", "type", "waiters", "waiters_total"}));
    CHECK(prod["type"] == "lock");
    CHECK(prod["mode"] == "exclusive");
    CHECK(prod["key"] == "rlock:lock:{deploy-prod}");
    REQUIRE(prod["holders"].size() == 1);
    CHECK(prod["holders"][0]["owner"] == "o1");
    CHECK(prod["holders"][0]["count"] == 1);
    CHECK(prod["holders"][0]["lease_ms"] == prod["ttl_ms"]);
    CHECK(prod["ttl_ms"].get<long long>() > 0);
    CHECK(prod["ttl_ms"].get<long long>() <= 30000);
    CHECK(prod["fence"] == redis.cmd_int({"GET", fence_key("deploy-prod")}));
    REQUIRE(prod["waiters"].size() == 1);
    CHECK(prod["waiters"][0]["owner"] == "w");
    CHECK(prod["waiters"][0]["kind"] == "lock");
    CHECK(prod["waiters"][0]["waited_ms"].get<long long>() >= 0);
    CHECK(prod["waiters_total"] == 1);
    CHECK(prod["grant"] == nullptr);

    auto& staging = entries["deploy-staging"];
    CHECK(staging["key"] == "rlock:lock:{deploy-staging}");
    REQUIRE(staging["holders"].size() == 1);
    CHECK(staging["holders"][0]["owner"] == "o2");
    CHECK(staging["holders"][0]["count"] == 2);
    CHECK(staging["ttl_ms"].get<long long>() > 30000);
    CHECK(staging["ttl_ms"].get<long long>() <= 60000);
    CHECK(staging["fence"] == redis.cmd_int({"GET", fence_key("deploy-staging")}));
    CHECK(staging["waiters"] == json::array());
    CHECK(staging["waiters_total"] == 0);
  }

  SUBCASE("pattern filters by lock name") {
    auto r = rlock(redis, {"inspect", "deploy*"});
    REQUIRE(r.status == 0);
    CHECK(names_of(by_name(parse_json(r.out))) == json::array({"deploy-prod", "deploy-staging"}));
    r = rlock(redis, {"inspect", "*-staging"});
    REQUIRE(r.status == 0);
    CHECK(names_of(by_name(parse_json(r.out))) == json::array({"deploy-staging"}));
    r = rlock(redis, {"inspect", "nothing-matches*"});
    REQUIRE(r.status == 0);
    CHECK(parse_json(r.out) == json::array());
  }

  SUBCASE("table format: a header and one row per lock") {
    auto r = rlock(redis, {"--format", "table", "inspect", "deploy-prod"});
    INFO("stdout: " << r.out);
    REQUIRE(r.status == 0);
    REQUIRE(line_count(r.out) == 2);
    const auto header = r.out.substr(0, r.out.find('\n'));
    const auto row = r.out.substr(header.size() + 1);
    CHECK(words(header) ==
          std::vector<std::string>{"TYPE", "NAME", "HOLDERS/COUNT", "TTL", "FENCE", "WAITERS"});
    auto cells = words(row);
    REQUIRE(cells.size() == 9);  // HOLDERS is "o1 (x1) since <acquired_at>"
    CHECK(cells[0] == "lock");
    CHECK(cells[1] == "deploy-prod");
    CHECK(row.find("o1 (x1) since ") != std::string::npos);
    CHECK(cells[4] == "since");
    CHECK(cells[5].back() == 'Z');
    CHECK(cells[6].back() == 's');
    CHECK(cells[7] == redis.cmd_str({"GET", fence_key("deploy-prod")}));
    CHECK(cells[8] == "1");
  }

  waiter.kill(SIGTERM);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 128 + SIGTERM);
}

// A hash under a lock key whose values are no counts (another program's data) is not a
// lock: inspect still lists the real locks, and skips it or reports it with an "error".
TEST_CASE("inspect: a hash that is no lock does not hide the real locks") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "real", "--owner", "o1"}).status == 0);
  redis.cmd({"HSET", lock_key("settings"), "mode", "fast"});

  for (const std::string format : {"json", "table"}) {
    INFO("format: " << format);
    auto r = rlock(redis, {"--format", format, "inspect"});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 0);
    if (format == "table") {
      CHECK(r.out.find("real") != std::string::npos);
      continue;
    }
    if (r.status != 0) continue;
    auto entries = by_name(parse_json(r.out));
    REQUIRE(entries.count("real") == 1);
    REQUIRE(entries["real"]["holders"].size() == 1);
    CHECK(entries["real"]["holders"][0]["owner"] == "o1");
    if (entries.count("settings") != 0) CHECK(entries["settings"].contains("error"));
  }
  CHECK(hash_of(redis, lock_key("settings")) == json::object({{"mode", "fast"}}));
}

// Every type's decoder, given values another program stored (malformed, or numbers out of
// range), lists that object with an "error" and goes on with the rest.
TEST_CASE("inspect: malformed objects of every type are listed with an error; the rest too") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "good", "--owner", "o1"}).status == 0);
  redis.cmd({"HSET", "rlock:lock-readers:{bad}", "x", "x:1"});
  redis.cmd({"HSET", "rlock:lock-readers:{huge}", "r", "99999999999999999999999:1"});
  redis.cmd({"HSET", lock_key("bigcount"), "o", "99999999999999999999999"});
  redis.cmd({"SET", "rlock:latch:{bigl}", "99999999999999999999999"});
  redis.cmd({"ZADD", "rlock:sem:{bigs}", "99999999999999999999999", "p.1"});
  redis.cmd({"HSET", "rlock:sem:{bigc}:cfg", "capacity", "99999999999999999999999"});
  redis.cmd({"ZADD", "rlock:sem:{bigc}", "99999999999999", "p.1"});
  for (const std::string format : {"json", "table"}) {
    INFO("format: " << format);
    auto r = rlock(redis, {"--format", format, "inspect"});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    if (format == "table") {
      CHECK(line_count(r.out) == 8);
      continue;
    }
    auto entries = by_name(parse_json(r.out));
    CHECK(names_of(entries) ==
          json::array({"bad", "bigc", "bigcount", "bigl", "bigs", "good", "huge"}));
    for (const std::string name : {"bad", "bigc", "bigcount", "bigl", "bigs", "huge"}) {
      INFO("object: " << entries[name].dump());
      CHECK(entries[name].contains("error"));
    }
    CHECK_FALSE(entries["good"].contains("error"));
    CHECK(entries["bad"]["holders"] ==
          json::array(
              {{{"owner", "x"}, {"count", nullptr}, {"lease_ms", nullptr}, {"shared", true}}}));
    CHECK(entries["bigl"]["count"] == nullptr);
  }
}

}  // namespace
}  // namespace rlock::test
