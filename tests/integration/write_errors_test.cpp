// A result that cannot be written (stdout on a full disk, or a reader that went away) is an
// error of every command: exit 74 with one line, which says what the command did all the
// same when it changed something on the server (so that the user can undo it).
#include <doctest/doctest.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

// `rlock --url <server> args... > /dev/full`.
RunResult to_full_disk(const RedisServer& redis, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"sh", "-c", "exec \"$@\" > /dev/full", "sh"};
  auto rl = rlock_argv(redis, args);
  argv.insert(argv.end(), rl.begin(), rl.end());
  return run(argv);
}

struct FullDiskCase {
  std::vector<std::string> args;
  std::vector<std::string> said;  // besides the write error, in the one line
};

TEST_CASE("every command exits 74 with one line when its result cannot be written") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "busy", "--owner", "x"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "U", "--owner", "a"}).status == 0);
  const std::vector<FullDiskCase> cases = {
      {{"lock", "L", "--owner", "a"},
       {"lock 'L' is held all the same (owner 'a', count 1, fence ",
        ", lease 30.0s); give it back with: rlock unlock 'L' --owner 'a'"}},
      {{"lock", "--shared", "R", "--owner", "a"}, {"(shared, owner 'a'", "rlock unlock -s 'R'"}},
      {{"sem", "acquire", "S", "--permits", "2", "--owner", "a"},
       {"semaphore 'S': 1 permit is held all the same (owner 'a', lease 30.0s); give it back "
        "with: rlock sem release 'S' --permit '"}},
      {{"delay-push", "q", "p", "--delay", "1h", "--id", "d1"},
       {"the item is queued all the same on queue 'q' (id 'd1')"}},
      {{"lock", "busy", "-n", "--owner", "y"}, {}},
      {{"unlock", "U", "--owner", "a"}, {}},
      {{"sem", "status", "S"}, {}},
      {{"latch", "set", "T", "2"}, {}},
      {{"latch", "status", "T"}, {}},
      {{"limit", "lim", "--rate", "10", "--per", "1s"}, {}},
      {{"inspect"}, {}},
      {{"inspect", "--format", "table"}, {}},
      {{"help"}, {}},
      {{"help", "lock"}, {}},
      {{"--version"}, {}},
  };
  for (const auto& c : cases) {
    auto r = to_full_disk(redis, c.args);
    INFO("rlock " << c.args.front() << " " << (c.args.size() > 1 ? c.args[1] : "")
                  << "; stderr: " << r.err);
    CHECK(r.status == 74);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.rfind("rlock: writing to stdout: No space left on device", 0) == 0);
    for (const auto& s : c.said) CHECK(r.err.find(s) != std::string::npos);
  }
  // What the line says stands.
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 1);
  CHECK(redis.cmd_int({"ZCARD", "rlock:sem:{S}"}) == 1);
  CHECK(redis.cmd_int({"HEXISTS", "rlock:queue:{q}:items", "d1"}) == 1);
  CHECK(redis.cmd_int({"EXISTS", lock_key("U")}) == 0);  // unlocked, unreported
  // -q prints nothing, so nothing fails.
  CHECK(to_full_disk(redis, {"-q", "lock", "L", "--owner", "a"}).status == 0);
}

}  // namespace
}  // namespace rlock::test
