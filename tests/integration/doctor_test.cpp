// rlock doctor against servers misconfigured on purpose: one finding each, with the level
// that says what it means for locks, and the exit status that follows from the levels.
#include <doctest/doctest.h>

#include <set>

#include "deployments.hpp"
#include "documented_acl.hpp"
#include "harness.hpp"

namespace rlock::test {
namespace {

// The finding `check` of a doctor result (the first one when several masters).
json finding(const json& doc, const std::string& check) {
  for (const auto& f : doc.at("findings")) {
    if (f.at("check") == check) return f;
  }
  FAIL("no finding " << check << " in " << doc.dump());
  return {};
}

TEST_CASE("doctor: a server fit for locks exits 0; each misconfiguration is one finding") {
  // AOF with fsync always, no eviction: nothing fails.
  RedisServer good(
      RedisOptions{.config = {"appendonly yes", "appendfsync always"}, .test_topology = false});
  auto r = rlock(good, {"doctor"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  json doc = json::parse(r.out);
  CHECK(doc.at("ok") == true);
  CHECK(finding(doc, "persistence").at("level") == "ok");
  CHECK(finding(doc, "persistence").at("detail").get<std::string>().find("appendfsync always") !=
        std::string::npos);
  CHECK(finding(doc, "eviction").at("level") == "ok");
  CHECK(finding(doc, "version").at("level") == "ok");
  CHECK(finding(doc, "acl").at("level") == "ok");
  CHECK(finding(doc, "clock").at("level") == "ok");
  CHECK(finding(doc, "timeout").at("level") == "ok");
  for (const auto& f : doc.at("findings"))
    CHECK(f.at("server") == "127.0.0.1:" + std::to_string(good.port()));

  struct Case {
    const char* what;
    std::vector<std::string> config;
    const char* check;
    const char* level;
    const char* says;
    int status;
  };
  const Case cases[] = {
      {"no persistence", {}, "persistence", "warn", "forgets every held lock", 0},
      {"RDB only", {"save 3600 1"}, "persistence", "warn", "RDB only", 0},
      {"an evicting policy",
       {"maxmemory 100mb", "maxmemory-policy allkeys-lru"},
       "eviction",
       "fail",
       "allkeys-lru evicts keys",
       1},
      {"a volatile policy",
       {"maxmemory 100mb", "maxmemory-policy volatile-ttl"},
       "eviction",
       "fail",
       "lock keys",
       1},
      {"idle connections closed", {"timeout 30"}, "timeout", "warn", "idle for 30s", 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    RedisServer server(RedisOptions{.config = c.config, .test_topology = false});
    r = rlock(server, {"doctor"});
    CAPTURE(r.out);
    CAPTURE(r.err);
    CHECK(r.status == c.status);
    doc = json::parse(r.out);
    CHECK(doc.at("ok") == (c.status == 0));
    json f = finding(doc, c.check);
    CHECK(f.at("level") == c.level);
    CHECK(f.at("detail").get<std::string>().find(c.says) != std::string::npos);
  }
}

TEST_CASE("doctor: ACL rights the user lacks are named; a user without ACL DRYRUN is unknown") {
  std::string acl = documented_acl_user();
  RedisServer server(RedisOptions{
      .config = {acl + " +acl|dryrun +acl|whoami +info +config|get",
                 // the documented rights but +time
                 "user notime on >pw resetkeys ~rlock:* resetchannels &rlock:* -@all +acl|dryrun "
                 "+acl|whoami +info +config|get +ping +evalsha +eval",
                 "user plain on >pw ~* &* -@all +info +ping +time +acl|whoami"},
      .test_topology = false});
  auto url = [&](const std::string& user, const std::string& pw) {
    return "redis://" + user + ":" + pw + "@127.0.0.1:" + std::to_string(server.port());
  };
  auto r = rlock_raw({"--url", url("rl", "rlpw"), "doctor"});
  INFO(r.out << r.err);
  json doc = json::parse(r.out);
  CHECK(finding(doc, "acl").at("level") == "ok");

  r = rlock_raw({"--url", url("notime", "pw"), "doctor"});
  CHECK(r.status == 1);
  doc = json::parse(r.out);
  json f = finding(doc, "acl");
  CHECK(f.at("level") == "fail");
  std::string detail = f.at("detail");
  CHECK(detail.find("+time") != std::string::npos);
  CHECK(detail.find("+evalsha") == std::string::npos);
  // CONFIG refused: the checks that need it say so instead of guessing
  r = rlock_raw({"--url", url("plain", "pw"), "doctor"});
  doc = json::parse(r.out);
  CHECK(finding(doc, "acl").at("level") == "unknown");
  CHECK(finding(doc, "timeout").at("level") == "unknown");
}

TEST_CASE("doctor: every master of a cluster once; --format table; unreachable exits 69") {
  ClusterSetup cluster(ClusterOptions{.masters = 3, .replicas_per_master = 0});
  auto r = rlock_raw({"--url", cluster.url(), "doctor"});
  INFO(r.out << r.err);
  json doc = json::parse(r.out);
  // A healthy cluster: each master says so once per check.
  for (const char* check : {"cluster", "slots", "sharded-pubsub"}) {
    CAPTURE(check);
    std::set<std::string> servers;
    for (const auto& f : doc.at("findings")) {
      if (f.at("check") != check) continue;
      CHECK(f.at("level") == "ok");
      servers.insert(f.at("server").get<std::string>());
    }
    CHECK(servers.size() == 3);
  }
  CHECK(finding(doc, "slots").at("detail").get<std::string>().find("16384 of 16384") !=
        std::string::npos);
  // no replicas in a cluster: warnings, not failures
  CHECK(finding(doc, "replication").at("level") == "warn");
  CHECK(finding(doc, "min-replicas").at("level") == "warn");
  CHECK(doc.at("ok") == true);

  r = rlock_raw({"--url", cluster.url(), "--format", "table", "doctor"});
  CHECK(r.out.rfind("LEVEL    SERVER", 0) == 0);
  CHECK(line_count(r.out) == 1 + static_cast<int>(doc.at("findings").size()));

  r = rlock_raw({"--url", "redis://127.0.0.1:" + std::to_string(free_port()), "doctor"});
  CHECK(r.status == 69);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
}

}  // namespace
}  // namespace rlock::test
