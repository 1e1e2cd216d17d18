// Command-line contract: usage errors, durations, names, wrong key types, version/help,
// and where the configuration comes from (flags > environment > config file).
#include <doctest/doctest.h>

#include <filesystem>

#include "harness.hpp"

namespace rlock::test {
namespace {

TEST_CASE("cli: bad input is a usage error (64) with one stderr line and no Redis change") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "existing", "--owner", "o"}).status == 0);
  const long long keys_before = redis.cmd_int({"DBSIZE"});

  struct Case {
    const char* what;
    std::vector<std::string> args;
  };
  const Case cases[] = {
      {"unknown subcommand", {"frobnicate"}},
      {"unknown flag", {"lock", "L", "--owner", "a", "--bogus"}},
      {"exec without --", {"exec", "L", "true"}},
      {"exec without a command", {"exec", "L", "--"}},
      {"lease 10x", {"lock", "L", "--owner", "a", "--lease", "10x"}},
      {"lease -5s", {"lock", "L", "--owner", "a", "--lease", "-5s"}},
      {"lease overflow", {"lock", "L", "--owner", "a", "--lease", "99999999999999999999d"}},
      {"lease empty", {"lock", "L", "--owner", "a", "--lease", ""}},
      {"wait 10x", {"lock", "L", "--owner", "a", "--wait", "10x"}},
      {"wait -5s", {"lock", "L", "--owner", "a", "--wait", "-5s"}},
      {"wait overflow", {"lock", "L", "--owner", "a", "--wait", "99999999999999999999d"}},
      {"exec lease 10x", {"exec", "--lease", "10x", "L", "--", "true"}},
      {"exec wait -5s", {"exec", "--wait", "-5s", "L", "--", "true"}},
      {"exec wait overflow", {"exec", "--wait", "99999999999999999999d", "L", "--", "true"}},
      {"exec min-hold 10x", {"exec", "--min-hold", "10x", "L", "--", "true"}},
      {"exec kill-after -5s", {"exec", "--kill-after", "-5s", "L", "--", "true"}},
      {"exec on-lost not a signal", {"exec", "--on-lost", "NOTASIGNAL", "L", "--", "true"}},
      {"timeout 10x", {"--timeout", "10x", "lock", "L", "--owner", "a"}},
      {"empty name", {"lock", "", "--owner", "a"}},
      {"513-byte name", {"lock", std::string(513, 'n'), "--owner", "a"}},
      {"control character in name",
       {"lock",
        "a\x01"
        "b",
        "--owner", "a"}},
      {"tab in name", {"lock", "a\tb", "--owner", "a"}},
      {"exec empty name", {"exec", "", "--", "true"}},
      {"unlock empty name", {"unlock", "", "--owner", "a"}},
      {"unlock 513-byte name", {"unlock", std::string(513, 'n'), "--force"}},
      {"format xml", {"--format", "xml", "inspect"}},
      {"conflict exit code not a number", {"lock", "L", "--owner", "a", "-E", "abc"}},
  };
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.what));
    auto r = rlock(redis, c.args);
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.out.empty());
    CHECK(redis.cmd_int({"DBSIZE"}) == keys_before);
  }
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
}

TEST_CASE("cli: a 512-byte name is fine") {
  RedisServer redis;
  const std::string name(512, 'n');
  auto r = rlock(redis, {"lock", name, "--owner", "a"});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out)["name"] == name);
  CHECK(hash_of(redis, lock_key(name)) == json::object({{"a", "1"}}));
}

TEST_CASE("cli: durations are 250ms, 30s, 5m, 2h, 1d or bare seconds") {
  RedisServer redis;
  struct Case {
    const char* text;
    long long ms;
  };
  const Case cases[] = {{"250ms", 250},   {"30s", 30000}, {"5m", 300000}, {"2h", 7200000},
                        {"1d", 86400000}, {"10", 10000},  {"0.5", 500},   {"1500ms", 1500}};
  for (const auto& c : cases) {
    INFO("duration: " << std::string(c.text));
    const std::string name = std::string("d-") + c.text;
    auto r = rlock(redis, {"lock", name, "--owner", "a", "--lease", c.text});
    REQUIRE(r.status == 0);
    CHECK(parse_json(r.out)["lease_ms"] == c.ms);
    long long pttl = redis.cmd_int({"PTTL", lock_key(name)});
    CHECK(pttl > 0);
    CHECK(pttl <= c.ms);
  }
}

TEST_CASE("cli: a key of another type where the lock should be is exit 65 and never touched") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir / "marker";
  redis.cmd({"SET", lock_key("L"), "x"});

  struct Case {
    const char* what;
    std::vector<std::string> args;
  };
  const Case cases[] = {
      {"lock", {"lock", "L", "--owner", "a"}},
      {"lock --wait", {"lock", "L", "--owner", "a", "--wait", "2s"}},
      {"exec", {"exec", "--owner", "a", "L", "--", "touch", marker}},
      {"unlock", {"unlock", "L", "--owner", "a"}},
      {"unlock --force", {"unlock", "L", "--force"}},
  };
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.what));
    auto r = rlock(redis, c.args);
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 65);
    CHECK(line_count(r.err) == 1);
    CHECK(redis.cmd_str({"TYPE", lock_key("L")}) == "string");
    CHECK(redis.cmd_str({"GET", lock_key("L")}) == "x");
  }
  CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("cli: --version, --help and help SUBCOMMAND") {
  auto r = rlock_raw({"--version"});
  CHECK(r.status == 0);
  CHECK(r.out == "rlock 0.1.0\n");

  r = rlock_raw({"--help"});
  CHECK(r.status == 0);
  for (const char* sub : {"lock", "unlock", "exec", "inspect"}) {
    INFO("subcommand: " << std::string(sub));
    CHECK(r.out.find(sub) != std::string::npos);
  }

  auto mentions_examples = [](std::string text) {
    for (auto& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return text.find("example") != std::string::npos;
  };
  for (const char* sub : {"lock", "unlock", "exec", "inspect"}) {
    INFO("subcommand: " << std::string(sub));
    r = rlock_raw({"help", sub});
    CHECK(r.status == 0);
    CHECK(mentions_examples(r.out));
    auto same = rlock_raw({sub, "--help"});
    CHECK(same.status == 0);
    CHECK(same.out == r.out);
  }
  // A subcommand's own subcommand: `help sem exec` is `sem exec --help`.
  for (const auto& [sub, inner] : {std::pair{"sem", "exec"}, std::pair{"latch", "await"}}) {
    INFO("subcommand: " << std::string(sub) << " " << std::string(inner));
    r = rlock_raw({"help", sub, inner});
    CHECK(r.status == 0);
    CHECK(r.out.find(std::string("\nUsage: rlock ") + sub + " " + inner + " ") !=
          std::string::npos);
    auto same = rlock_raw({sub, inner, "--help"});
    CHECK(same.out == r.out);
  }
}

TEST_CASE("cli: configuration precedence is flags > environment > config file") {
  RedisServer redis;
  TempDir dir;
  const std::string config = dir / "config.json";
  const std::string dead_url = "redis://127.0.0.1:" + std::to_string(free_port());
  write_file(
      config,
      json::object({{"url", redis.url()}, {"owner", "cfg-owner"}, {"prefix", "cfgp:"}}).dump());
  const Env with_config{{"RLOCK_CONFIG", config}};

  // The config file alone: url, owner and prefix.
  auto r = rlock_raw({"lock", "c1"}, with_config);
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out)["owner"] == "cfg-owner");
  CHECK(hash_of(redis, lock_key("c1", "cfgp:")) == json::object({{"cfg-owner", "1"}}));
  r = rlock_raw({"unlock", "c1"}, with_config);  // the owner comes from the config too
  CHECK(r.status == 0);

  // The environment beats the config file.
  Env env = with_config;
  env.insert(env.end(), {{"RLOCK_OWNER", "env-owner"}, {"RLOCK_PREFIX", "envp:"}});
  r = rlock_raw({"lock", "c2"}, env);
  REQUIRE(r.status == 0);
  CHECK(hash_of(redis, lock_key("c2", "envp:")) == json::object({{"env-owner", "1"}}));

  // Flags beat the environment.
  r = rlock_raw({"--prefix", "flagp:", "lock", "c3", "--owner", "flag-owner"}, env);
  REQUIRE(r.status == 0);
  CHECK(hash_of(redis, lock_key("c3", "flagp:")) == json::object({{"flag-owner", "1"}}));

  // URL: --url > RLOCK_URL > REDIS_URL > config file.
  const std::string dead_config = dir / "dead.json";
  write_file(dead_config, json::object({{"url", dead_url}}).dump());
  r = rlock_raw({"lock", "u1", "--owner", "a"}, {{"RLOCK_CONFIG", dead_config}});
  CHECK(r.status == 69);
  r = rlock_raw({"lock", "u2", "--owner", "a"},
                {{"RLOCK_CONFIG", dead_config}, {"REDIS_URL", redis.url()}});
  CHECK(r.status == 0);
  r = rlock_raw(
      {"lock", "u3", "--owner", "a"},
      {{"RLOCK_CONFIG", dead_config}, {"REDIS_URL", dead_url}, {"RLOCK_URL", redis.url()}});
  CHECK(r.status == 0);
  r = rlock_raw({"--url", redis.url(), "lock", "u4", "--owner", "a"},
                {{"RLOCK_CONFIG", dead_config}, {"RLOCK_URL", dead_url}});
  CHECK(r.status == 0);
  for (const char* name : {"u2", "u3", "u4"}) {
    INFO("name: " << std::string(name));
    CHECK(hash_of(redis, lock_key(name)) == json::object({{"a", "1"}}));
  }
}

}  // namespace
}  // namespace rlock::test
