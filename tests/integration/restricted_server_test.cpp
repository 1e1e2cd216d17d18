// Servers as managed services run them: CONFIG, CLIENT and DEBUG refused (ElastiCache and
// MemoryDB refuse CONFIG, some refuse CLIENT and DEBUG; `rename-command X ""` does the same).
// rlock's primitives need none of them; what needs them says so and falls back.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

RedisOptions restricted() {
  return RedisOptions{.config = {"rename-command CONFIG \"\"", "rename-command CLIENT \"\"",
                                 "rename-command DEBUG \"\""},
                      .test_topology = false};
}

TEST_CASE("CONFIG, CLIENT and DEBUG renamed away: every primitive works") {
  RedisServer redis(restricted());
  const std::vector<std::vector<std::string>> calls = {
      {"lock", "l", "--owner", "o"},
      {"unlock", "l", "--owner", "o"},
      {"exec", "e", "--", "true"},
      {"exec", "--shared", "e", "--", "true"},
      {"sem", "exec", "s", "--permits", "1", "--", "true"},
      {"latch", "set", "c", "1"},
      {"latch", "count-down", "c", "--id", "a"},
      {"latch", "await", "c", "--wait", "1s"},
      {"limit", "r", "--rate", "5", "--per", "1s"},
      {"delay-push", "q", "x", "--delay", "0"},
      {"delay-pop", "q"},
      {"inspect"},
  };
  for (const auto& args : calls) {
    CAPTURE(json(args).dump());
    auto r = rlock(redis, args);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
  }
}

TEST_CASE("CONFIG renamed away: inspect --watch lists every --interval, saying why under -v") {
  RedisServer redis(restricted());
  REQUIRE(rlock(redis, {"lock", "w", "--owner", "o", "--lease", "60s"}).status == 0);
  auto watch = spawn_rlock(redis, {"-v", "inspect", "--watch", "--interval", "300ms"});
  REQUIRE(watch.read_line(deadline(10s)));
  std::optional<std::string> explained;
  while ((explained = watch.read_err_line(deadline(5s))) &&
         !explained->starts_with("rlock: listing again")) {
  }
  REQUIRE(explained);
  CHECK(explained->starts_with("rlock: listing again every 300ms (CONFIG GET "));
  CHECK(explained->find("unknown command") != std::string::npos);
  REQUIRE(watch.read_line(deadline(10s)));  // and it does list again
}

TEST_CASE("doctor: a check that needs CONFIG is unknown with the server's answer, never a fail") {
  RedisServer redis(restricted());
  auto r = rlock(redis, {"doctor"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  json doc = json::parse(r.out);
  CHECK(doc.at("ok") == true);
  std::vector<std::string> unknown;
  for (const auto& f : doc.at("findings")) {
    CHECK(f.at("level") != "fail");
    if (f.at("level") != "unknown") continue;
    unknown.push_back(f.at("check"));
    CHECK(f.at("detail").get<std::string>().find("unknown command 'CONFIG'") != std::string::npos);
  }
  CHECK(unknown == std::vector<std::string>{"persistence", "timeout", "min-replicas"});
}

}  // namespace
}  // namespace rlock::test
