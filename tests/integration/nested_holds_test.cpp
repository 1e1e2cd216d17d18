// Requests made from inside a job that rlock runs under a hold of the same lock or
// semaphore: one that could only be granted once that hold is released would wait for
// itself, so it is refused at once (exit 65), whatever --wait says; one that can be granted
// beside the hold (a downgrade, a reader with no writer queued, a permit left) goes on as
// before. The job learns its holds from RLOCK_HOLDS, which the server checks: a copied value
// grants nothing.
#include <doctest/doctest.h>

#include <regex>

#include "harness.hpp"

namespace rlock::test {
namespace {

bool saw_line(Spawned& proc, const std::string& want) {
  const auto until = deadline(15s);
  while (auto line = proc.read_line(until)) {
    if (*line == want) return true;
  }
  return false;
}

bool queued(const RedisServer& redis, const std::string& key, long long n) {
  return poll_until([&] { return redis.cmd_int({"ZCARD", key}) == n; }, 10s);
}

// `rlock exec OUTER...` whose job runs the shell `inner` (with $RL the binary, $URL the
// server) and prints "inner=<status>"; returns the outer run. The outer run is bounded:
// an inner request that waited for its own job would fail the test at 30s.
RunResult nested(const RedisServer& redis, const std::vector<std::string>& outer,
                 const std::string& inner, const Env& env = {}) {
  std::vector<std::string> argv = outer;
  argv.insert(argv.end(), {"--", "sh", "-c", inner + "; echo \"inner=$?\""});
  Env e = env;
  e.push_back({"RL", rlock_binary()});
  e.push_back({"URL", redis.url()});
  return rlock(redis, argv, e, 30s);
}

const std::string kWaitsForItself = "would wait for itself";

TEST_CASE("nested: an exclusive request on the job's own exec --shared lock is refused at once") {
  RedisServer redis;
  for (const Env& owner : {Env{{"RLOCK_OWNER", "ci"}}, Env{}}) {
    for (const std::string& inner :
         {std::string(R"("$RL" --url "$URL" exec --wait inf L -- echo ran)"),
          std::string(R"("$RL" --url "$URL" lock --wait inf L --owner other)"),
          std::string(R"("$RL" --url "$URL" exec -n L -- echo ran)")}) {
      CAPTURE(inner);
      auto r = nested(redis, {"exec", "--shared", "L"}, inner, owner);
      INFO("stderr: " << r.err);
      CHECK(r.status == 0);
      CHECK(r.out == "inner=65\n");
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find(kWaitsForItself) != std::string::npos);
      CHECK(r.elapsed < 10s);
      // Nothing is left queued or held.
      CHECK(redis.cmd_int({"EXISTS", lock_key("L") + ":waiters"}) == 0);
      CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
      CHECK(redis.cmd_int({"EXISTS", "rlock:lock-readers:{L}"}) == 0);
    }
  }
}

TEST_CASE("nested: inside an exclusive exec, a request only its release could grant is refused") {
  RedisServer redis;
  const Env ci{{"RLOCK_OWNER", "ci"}};
  struct Case {
    std::string inner;
    std::string want;
  };
  const Case cases[] = {
      // Same owner: another exec (either mode) waits for this one: refused.
      {R"("$RL" --url "$URL" exec --wait inf L -- echo ran)", "inner=65\n"},
      {R"("$RL" --url "$URL" exec --shared --wait inf L -- echo ran)", "inner=65\n"},
      // Another owner waits for the job's hold: refused.
      {R"("$RL" --url "$URL" lock --shared --wait inf L --owner other)", "inner=65\n"},
      {R"("$RL" --url "$URL" exec --wait inf --owner other L -- echo ran)", "inner=65\n"},
      // The owner's own lock re-enters, and lock --shared downgrades: granted as before.
      {R"("$RL" --url "$URL" -q lock L && "$RL" --url "$URL" -q unlock L)", "inner=0\n"},
      {R"("$RL" --url "$URL" -q lock --shared L && "$RL" --url "$URL" -q unlock -s L)",
       "inner=0\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.inner);
    auto r = nested(redis, {"exec", "L"}, c.inner, ci);
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
    CHECK(r.out == c.want);
    if (c.want == "inner=65\n") CHECK(r.err.find(kWaitsForItself) != std::string::npos);
    CHECK(r.elapsed < 10s);
    CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
    CHECK(redis.cmd_int({"EXISTS", lock_key("L") + ":waiters"}) == 0);
  }
}

TEST_CASE(
    "nested: a reader inside exec --shared runs beside it, but not behind a writer waiting "
    "for it") {
  RedisServer redis;
  TempDir dir;
  auto go = make_fifo(dir, "go");
  const std::string inner =
      R"(echo ready; read x < "$GO"; "$RL" --url "$URL" exec --shared --wait inf L -- echo inner-ran)";
  const Env env{{"RL", rlock_binary()}, {"URL", redis.url()}, {"GO", go}};

  SUBCASE("no writer queued: it runs beside the job's hold") {
    auto outer = spawn_rlock(
        redis, {"exec", "--shared", "L", "--", "sh", "-c", inner + "; echo \"inner=$?\""}, env);
    REQUIRE(saw_line(outer, "ready"));
    write_file(go, "go\n", 0600);
    REQUIRE(outer.wait(deadline(20s)).value_or(kStillRunning) == 0);
    CHECK(outer.out().find("inner-ran\ninner=0\n") != std::string::npos);
  }
  SUBCASE("a writer queued meanwhile: refused at once, and the writer runs after the job") {
    auto outer = spawn_rlock(
        redis, {"exec", "--shared", "L", "--", "sh", "-c", inner + "; echo \"inner=$?\""}, env);
    REQUIRE(saw_line(outer, "ready"));
    auto writer = spawn_rlock(redis, {"exec", "--wait", "inf", "L", "--", "echo", "writer-ran"});
    REQUIRE(queued(redis, lock_key("L") + ":waiters", 1));
    write_file(go, "go\n", 0600);
    REQUIRE(outer.wait(deadline(20s)).value_or(kStillRunning) == 0);
    INFO("outer stderr: " << outer.err());
    CHECK(outer.out() == "ready\ninner=65\n");
    CHECK(outer.err().find(kWaitsForItself) != std::string::npos);
    CHECK(writer.wait(deadline(20s)).value_or(kStillRunning) == 0);
    CHECK(writer.out() == "writer-ran\n");
  }
}

TEST_CASE("nested: sem exec's job asking for permits only its own release could free is refused") {
  RedisServer redis;
  const Env ci{{"RLOCK_OWNER", "ci"}};
  // Capacity 1, held by the job: waiting would wait for itself.
  auto r = nested(redis, {"sem", "exec", "--permits", "1", "S"},
                  R"("$RL" --url "$URL" sem acquire --permits 1 --wait inf S)", ci);
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "inner=65\n");
  CHECK(r.err.find(kWaitsForItself) != std::string::npos);
  CHECK(r.elapsed < 10s);
  // The same through sem exec, and asking for more than the job leaves of capacity 3.
  r = nested(redis, {"sem", "exec", "--permits", "3", "--count", "2", "S3"},
             R"("$RL" --url "$URL" sem exec --permits 3 --count 2 --wait inf S3 -- echo ran)", ci);
  CHECK(r.out == "inner=65\n");
  CHECK(r.elapsed < 10s);
  CHECK(redis.cmd_int({"EXISTS", "rlock:sem:{S3}:waiters"}) == 0);

  // A permit someone else holds comes back with its lease: that wait is not for itself.
  REQUIRE(rlock(redis, {"sem", "acquire", "--permits", "2", "S2", "--lease", "2s", "--owner", "o"})
              .status == 0);
  r = nested(redis, {"sem", "exec", "--permits", "2", "S2"},
             R"("$RL" --url "$URL" -q sem acquire --permits 2 --wait 20s S2)", ci);
  INFO("stderr: " << r.err);
  CHECK(r.out == "inner=0\n");
  CHECK(r.elapsed >= 1s);
}

TEST_CASE("nested: RLOCK_HOLDS names the job's holds, and a copied value grants nothing") {
  RedisServer redis;
  TempDir dir;
  auto go = make_fifo(dir, "go");
  auto outer = spawn_rlock(redis, {"exec", "L", "--owner", "a b%c", "--", "sh", "-c",
                                   "echo \"$RLOCK_HOLDS\"; read x < " + go});
  auto holds = outer.read_line(deadline(15s));
  REQUIRE(holds.has_value());
  CHECK(std::regex_match(*holds, std::regex("[0-9a-f]{16}:a%20b%25c")));
  const Env copied{{"RLOCK_HOLDS", *holds}};
  const auto before = hash_of(redis, lock_key("L"));

  // Copied into an unrelated process (any owner, even the job's): refused, nothing granted.
  auto r = rlock(redis, {"exec", "-n", "L", "--", "echo", "ran"}, copied);
  CHECK(r.status == 65);
  CHECK(r.out.empty());
  r = rlock(redis, {"exec", "-n", "L", "--owner", "a b%c", "--", "echo", "ran"}, copied);
  CHECK(r.status == 65);
  CHECK(r.out.empty());
  r = rlock(redis, {"lock", "--shared", "-n", "L", "--owner", "x"}, copied);
  CHECK(r.status == 65);
  CHECK(hash_of(redis, lock_key("L")) == before);
  CHECK(redis.cmd_int({"EXISTS", "rlock:lock-readers:{L}"}) == 0);
  // Malformed or forged entries are ignored: an ordinary busy lock.
  r = rlock(redis, {"exec", "-n", "L", "--", "echo", "ran"},
            {{"RLOCK_HOLDS", "zz:x 0123456789abcdef:y " + holds->substr(0, 16) + ":%zz"}});
  CHECK(r.status == 75);

  write_file(go, "go\n", 0600);
  REQUIRE(outer.wait(deadline(15s)).value_or(kStillRunning) == 0);
  // Once that hold is gone, the stale value changes nothing.
  r = rlock(redis, {"exec", "-n", "L", "--", "echo", "ran"}, copied);
  CHECK(r.status == 0);
  CHECK(r.out == "ran\n");
}

}  // namespace
}  // namespace rlock::test
