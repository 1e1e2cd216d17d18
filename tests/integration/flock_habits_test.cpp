// flock(1)'s habits that rlock takes: -x, -c 'CMD', -w in exponent notation, --nb; and the
// misuses of them, each one line and exit 64 with nothing written to Redis. Where util-linux's
// flock is installed, it runs beside rlock, so a test shows what a flock user expects.
#include <doctest/doctest.h>
#include <unistd.h>

#include <optional>

#include "harness.hpp"

namespace rlock::test {
namespace {

TEST_CASE("flock habits: exec -c runs the command with $SHELL -c, under the lock") {
  RedisServer redis;
  // The shell sees the lock: RLOCK_NAME from the environment, a pipeline, its own status.
  auto r = rlock(redis, {"exec", "-c", "printf '%s|' \"$RLOCK_NAME\" | tr '|' '!'; exit 3", "C"},
                 {{"SHELL", "/bin/sh"}});
  CHECK(r.status == 3);
  CHECK(r.out == "C!");
  CHECK(redis.cmd_int({"EXISTS", lock_key("C")}) == 0);
  // $SHELL is the shell, as for flock -c; unset or empty means /bin/sh.
  r = rlock(redis, {"exec", "--command", "echo \"$0\"", "C"}, {{"SHELL", "/bin/bash"}});
  CHECK(r.status == 0);
  CHECK(r.out == "/bin/bash\n");
  r = rlock(redis, {"exec", "-c", "echo \"$0\"", "C"}, {{"SHELL", ""}});
  CHECK(r.out == "/bin/sh\n");
  // Busy: the command is not run, as with -- CMD.
  REQUIRE(rlock(redis, {"lock", "C", "--owner", "holder"}).status == 0);
  r = rlock(redis, {"exec", "-c", "echo ran", "C"});
  CHECK(r.status == 75);
  CHECK(r.out.empty());
}

TEST_CASE("flock habits: -x is the exclusive default and excludes -s") {
  RedisServer redis;
  auto r = rlock(redis, {"lock", "-x", "X", "--owner", "a"});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("\"acquired\":true") != std::string::npos);
  // exclusive: a reader is refused while a -x holder holds it
  r = rlock(redis, {"lock", "-s", "X", "--owner", "b"});
  CHECK(r.status == 75);
  r = rlock(redis, {"exec", "-x", "X", "--", "true"});
  CHECK(r.status == 75);
  REQUIRE(rlock(redis, {"unlock", "X", "--owner", "a"}).status == 0);
  r = rlock(redis, {"exec", "--exclusive", "X", "--", "true"});
  CHECK(r.status == 0);
}

TEST_CASE("flock habits: -w takes a number of seconds in exponent notation") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "W", "--owner", "holder"}).status == 0);
  auto r = rlock(redis, {"exec", "-w", "1e-1", "W", "--", "true"});
  CHECK(r.status == 75);
  // 100 ms of waiting, not 1 s or none: generous bounds either side
  CHECK(r.elapsed >= 90ms);
  CHECK(r.elapsed < 900ms);
}

TEST_CASE("flock habits: misuses are one line, exit 64, nothing written") {
  RedisServer redis;
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {{"exec", "-c", "true", "M", "--", "true"}, "not both"},
      {{"exec", "-c", "", "M"}, "-c needs a command"},
      {{"exec", "-s", "-x", "M", "--", "true"}, "excludes"},
      {{"lock", "-x", "--shared", "M"}, "excludes"},
      {{"sem", "acquire", "-s", "--permits", "2", "M"}, "unknown option '-s'"},
      {{"sem", "exec", "-x", "--permits", "2", "M", "--", "true"}, "unknown option '-x'"},
      {{"exec", "-w", "1e", "M", "--", "true"}, "invalid duration"},
      {{"exec", "-w", "1e1000", "M", "--", "true"}, "invalid duration"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    auto r = rlock(redis, c.args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

// util-linux's flock, when installed: its exit status for `args`.
std::optional<int> flock_status(const std::vector<std::string>& args) {
  if (::access("/usr/bin/flock", X_OK) != 0) return std::nullopt;
  std::vector<std::string> argv = {"/usr/bin/flock"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv).status;
}

TEST_CASE("flock habits: --nb and --nonblock are -n on lock and exec") {
  RedisServer redis;
  TempDir dir;
  const std::string file = dir / "f";
  for (const char* spelling : {"--nb", "--nonblock"}) {
    CAPTURE(spelling);
    if (auto flock = flock_status({spelling, file, "true"})) CHECK(*flock == 0);
    auto r = rlock(redis, {"exec", spelling, "N", "--", "echo", "ran"});
    CHECK(r.status == 0);
    CHECK(r.out == "ran\n");
    REQUIRE(rlock(redis, {"lock", "N", "--owner", "holder"}).status == 0);
    r = rlock(redis, {"exec", spelling, "N", "--", "echo", "ran"});
    CHECK(r.status == 75);
    CHECK(r.out.empty());
    r = rlock(redis, {"lock", "N", spelling, "--owner", "other"});
    CHECK(r.status == 75);
    CHECK(parse_json(r.out).at("acquired") == false);
    r = rlock(redis, {"lock", "N", spelling, "--wait", "1s", "--owner", "other"});
    CHECK(r.status == 64);
    CHECK(r.err.find("excludes") != std::string::npos);
    REQUIRE(rlock(redis, {"unlock", "N", "--owner", "holder"}).status == 0);
  }
  // Not on a semaphore, which takes none of flock's spellings.
  auto r = rlock(redis, {"sem", "acquire", "--nb", "--permits", "1", "S"});
  CHECK(r.status == 64);
  CHECK(r.err.find("unknown option '--nb'") != std::string::npos);
}

TEST_CASE("flock habits: --timeout after lock or exec is refused, naming --wait") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "T", "--owner", "holder"}).status == 0);
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {{"exec", "--timeout", "5", "-E", "5", "T", "--", "true"}, "use --wait 5 (or put"},
      {{"exec", "T", "--timeout=1e-1", "--", "true"}, "use --wait 1e-1 (or put"},
      {{"lock", "T", "--owner", "b", "--timeout", "2s"}, "use --wait 2s (or put"},
      {{"-q", "lock", "--timeout", "2s", "U", "--owner", "b"}, "use --wait 2s (or put"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    auto r = rlock(redis, c.args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("rlock: --timeout after the subcommand is rlock's Redis command timeout") ==
          0);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  CHECK(redis.cmd_int({"EXISTS", lock_key("U")}) == 0);
  // Before the subcommand it is the Redis command timeout, as ever; a name after `--` is a
  // name; other subcommands take it after their name.
  CHECK(rlock(redis, {"--timeout", "5", "exec", "-E", "5", "T", "--", "true"}).status == 5);
  CHECK(rlock(redis, {"lock", "--owner", "o", "--", "--timeout"}).status == 0);
  CHECK(rlock(redis, {"unlock", "T", "--owner", "holder", "--timeout", "2s"}).status == 0);
}

TEST_CASE("flock habits: a nested exec -n of the job's own lock exits 65, flock -n 1") {
  RedisServer redis;
  TempDir dir;
  const std::string file = dir / "f";
  if (auto flock = flock_status({file, "/usr/bin/flock", "-n", file, "true"})) CHECK(*flock == 1);
  // Not busy for a while but never grantable: 65, as for --wait inf (docs/how-it-works.md,
  // Re-entry).
  auto r = rlock(redis, {"exec", "L", "--", rlock_binary(), "--url", redis.url(), "exec", "-n", "L",
                         "--", "echo", "ran"});
  CHECK(r.status == 65);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("this request would wait for itself") != std::string::npos);
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
}

}  // namespace
}  // namespace rlock::test
