// Sentinel and Cluster URLs at the command line, before the topologies behind them: they
// parse (or fail with one usage line that repeats no secret), and the sentinels' own
// credentials come from the URL or the config file, never from argv.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

TEST_CASE("topology URLs: malformed ones exit 64 with one line and no secret") {
  const char* urls[] = {
      "redis-sentinel://:S3cret@127.0.0.1:1",                         // no master name
      "redis-sentinel://:S3cret@127.0.0.1:1,,127.0.0.1:2/m",          // empty host
      "redis-sentinel://127.0.0.1:1/m?sentinel_password=S3cret&x=1",  // unknown parameter
      "redis-cluster://:S3cret@127.0.0.1:1/3",                        // a database
      "redis-sentinal://:S3cret@127.0.0.1:1/m",                       // unknown scheme
  };
  for (const std::string url : urls) {
    CAPTURE(url);
    for (const Env& env : {Env{}, Env{{"RLOCK_URL", url}}}) {
      auto r = env.empty() ? rlock_raw({"--url", url, "lock", "n"}) : rlock_raw({"lock", "n"}, env);
      CHECK(r.status == 64);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.rfind("rlock: invalid redis URL", 0) == 0);
      CHECK(r.err.find("S3cret") == std::string::npos);
    }
  }
}

TEST_CASE("topology URLs: unreachable sentinels or cluster nodes give 69, one line, no secret") {
  const char* urls[] = {
      "redis-sentinel://:S3cret@127.0.0.1:1,127.0.0.1:2/mymaster?sentinel_password=S3cret",
      "redis-cluster://:S3cret@127.0.0.1:1,127.0.0.1:2",
  };
  for (const std::string url : urls) {
    CAPTURE(url);
    auto r = rlock_raw({"--url", url, "--timeout", "500ms", "lock", "n"});
    CHECK(r.status == 69);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("cannot connect to redis at 127.0.0.1:") != std::string::npos);
    CHECK(r.err.find("S3cret") == std::string::npos);
  }
}

TEST_CASE("config file: sentinel_user and sentinel_password; such a file must be chmod 600") {
  RedisServer redis;
  TempDir dir;
  const std::string config = dir / "config.json";
  const std::string body =
      json::object({{"url", redis.url()}, {"sentinel_password", "S3cret"}}).dump();

  write_file(config, body, 0644);
  auto r = rlock_raw({"lock", "n", "--owner", "a"}, {{"RLOCK_CONFIG", config}});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("accessible by group or others (mode 0644)") != std::string::npos);
  CHECK(r.err.find("S3cret") == std::string::npos);
  CHECK(hash_of(redis, lock_key("n")) == json::object());

  write_file(config, body, 0600);
  r = rlock_raw({"lock", "n", "--owner", "a"}, {{"RLOCK_CONFIG", config}});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("n")) == json::object({{"a", "1"}}));

  // A sentinel user needs a sentinel password, from the URL or the config file.
  write_file(config, json::object({{"sentinel_user", "watcher"}}).dump(), 0600);
  r = rlock_raw({"--url", "redis-sentinel://127.0.0.1:1/m", "lock", "n"},
                {{"RLOCK_CONFIG", config}});
  CHECK(r.status == 64);
  CHECK(r.err.find("sentinel_user is set but no sentinel password") != std::string::npos);
  r = rlock_raw({"--url", "redis-sentinel://127.0.0.1:1/m?sentinel_password=pw", "lock", "n"},
                {{"RLOCK_CONFIG", config}});
  CHECK(r.status == 69);  // resolved; no sentinel listens there
}

}  // namespace
}  // namespace rlock::test
