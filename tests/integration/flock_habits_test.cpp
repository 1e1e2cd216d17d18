// flock(1)'s habits that rlock takes: -x, -c 'CMD', -w in exponent notation; and the
// misuses of them, each one line and exit 64 with nothing written to Redis.
#include <doctest/doctest.h>

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

}  // namespace
}  // namespace rlock::test
