// Queue policies of one lock: --supersede (a newer waiter makes the older queued ones exit
// 79, a stopped one too once resumed), --cancel-running (the running --supersede job is
// stopped, dead before the newest starts), --priority (higher first, FIFO within a level),
// beside plain waiters that keep their FIFO places; their bad values exit 64.
#include <doctest/doctest.h>
#include <signal.h>

#include <sstream>

#include "harness.hpp"

namespace rlock::test {
namespace {

constexpr const char* kName = "q";

long long queued(const RedisServer& redis) { return live_waiters(redis, kName); }

// An exec waiter that appends `tag` to `order` when it runs; queued before this returns.
Spawned start_waiter(const RedisServer& redis, const std::string& order, const std::string& tag,
                     std::vector<std::string> flags) {
  const long long before = queued(redis);
  std::vector<std::string> args = {"exec", "--wait", "60s", "--owner", tag};
  args.insert(args.end(), flags.begin(), flags.end());
  for (const char* a : {kName, "--", "sh", "-c"}) args.push_back(a);
  args.push_back("echo " + tag + " >> " + order);
  Spawned w = spawn_rlock(redis, args);
  REQUIRE(poll_until([&] { return queued(redis) == before + 1; }, 10s, 2ms));
  return w;
}

std::vector<std::string> words_of(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(read_file(path));
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

void hold(const RedisServer& redis) {
  REQUIRE(rlock(redis, {"lock", kName, "--owner", "holder", "--lease", "60s"}).status == 0);
}

void release(const RedisServer& redis) {
  REQUIRE(rlock(redis, {"unlock", kName, "--owner", "holder"}).status == 0);
}

// The superseded waiter `w` exited 79 with one line naming `newer`'s owner.
void check_superseded(Spawned& w, const std::string& newer) {
  CHECK(w.wait(deadline(10s)).value_or(kStillRunning) == 79);
  INFO("stderr: " << w.err());
  CHECK(w.err().find("owner '" + newer + "'") != std::string::npos);
  CHECK(w.err().find("superseded") != std::string::npos);
}

TEST_CASE("supersede: of A, B, C only C runs; A and B exit 79 naming the newer owner") {
  RedisServer redis;
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  hold(redis);
  auto a = start_waiter(redis, order, "a", {"--supersede"});
  // B queues (counted with A still there), then A leaves.
  Spawned b = spawn_rlock(redis, {"exec", "--wait", "60s", "--owner", "b", "--supersede", kName,
                                  "--", "sh", "-c", "echo b >> " + order});
  check_superseded(a, "b");
  REQUIRE(poll_until([&] { return queued(redis) == 1; }, 10s, 2ms));
  Spawned c = spawn_rlock(redis, {"exec", "--wait", "60s", "--owner", "c", "--supersede", kName,
                                  "--", "sh", "-c", "echo c >> " + order});
  check_superseded(b, "c");
  REQUIRE(poll_until([&] { return queued(redis) == 1; }, 10s, 2ms));
  release(redis);
  CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(words_of(order) == std::vector<std::string>{"c"});
}

TEST_CASE(
    "supersede: a waiter stopped while superseded takes nothing when resumed on a free lock") {
  RedisServer redis;
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  hold(redis);
  auto a = start_waiter(redis, order, "a", {"--supersede"});
  a.kill(SIGSTOP);
  Spawned c = spawn_rlock(redis, {"exec", "--wait", "60s", "--owner", "c", "--supersede", kName,
                                  "--", "sh", "-c", "echo c >> " + order});
  // A's entry is gone and C's is there: one waiter, and it is C (its run comes next).
  REQUIRE(poll_until([&] { return queued(redis) == 1 && read_file(order).empty(); }, 10s, 2ms));
  REQUIRE(poll_until(
      [&] {
        return rlock(redis, {"inspect", kName}).out.find("\"c\"") != std::string::npos;
      },
      10s, 10ms));
  release(redis);
  REQUIRE(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  // The lock is free now; A wakes to it and still takes nothing.
  a.kill(SIGCONT);
  check_superseded(a, "c");
  CHECK(words_of(order) == std::vector<std::string>{"c"});
  auto free = rlock(redis, {"lock", kName, "--owner", "after"});
  CHECK(free.status == 0);
}

TEST_CASE("supersede: plain waiters keep FIFO; a supersede waiter has its own arrival place") {
  RedisServer redis;
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  hold(redis);
  auto p1 = start_waiter(redis, order, "p1", {});
  auto s1 = start_waiter(redis, order, "s1", {"--supersede"});
  auto p2 = start_waiter(redis, order, "p2", {});
  Spawned s2 = spawn_rlock(redis, {"exec", "--wait", "60s", "--owner", "s2", "--supersede", kName,
                                   "--", "sh", "-c", "echo s2 >> " + order});
  check_superseded(s1, "s2");
  REQUIRE(poll_until([&] { return queued(redis) == 3; }, 10s, 2ms));
  auto p3 = start_waiter(redis, order, "p3", {});
  release(redis);
  for (Spawned* w : {&p1, &p2, &s2, &p3})
    CHECK(w->wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(words_of(order) == std::vector<std::string>{"p1", "p2", "s2", "p3"});
}

// A running --supersede exec whose job, on TERM, either ends after writing `dead` (slowly),
// or (ignore_term) ignores it and is KILLed; the newest --cancel-running waiter's job then
// checks that the first job is gone.
void run_cancel(bool ignore_term) {
  RedisServer redis;
  TempDir dir;
  const std::string pid = dir / "pid", dead = dir / "dead", seen = dir / "seen";
  const std::string on_term =
      ignore_term ? "trap '' TERM; " : "trap 'sleep 0.3; echo dead > " + dead + "; exit 3' TERM; ";
  Spawned h = spawn_rlock(
      redis, {"exec", "--supersede", "--lease", "3s", "--kill-after", "1s", kName, "--", "sh", "-c",
              on_term + "echo $$ > " + pid + "; echo in; while :; do sleep 0.1; done"});
  REQUIRE(h.read_line(deadline(10s)) == std::optional<std::string>("in"));
  // The newest's job: was the first job dead (its file written, or its process gone)?
  const std::string check =
      ignore_term ? "if kill -0 $(cat " + pid + ") 2>/dev/null; then echo alive; else echo gone; fi"
                  : "cat " + dead + " 2>/dev/null || echo missing";
  Spawned c = spawn_rlock(
      redis, {"exec", "--wait", "60s", "--owner", "c", "--supersede", "--cancel-running", kName,
              "--", "sh", "-c", "(" + check + ") > " + seen});
  CHECK(h.wait(deadline(20s)).value_or(kStillRunning) == 79);
  INFO("holder's stderr: " << h.err());
  CHECK(h.err().find("cancelled") != std::string::npos);
  CHECK(c.wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(read_file(seen) == (ignore_term ? "gone\n" : "dead\n"));
}

TEST_CASE(
    "cancel-running: the running supersede job gets TERM and is dead before the newest runs") {
  run_cancel(false);
}

TEST_CASE("cancel-running: a job that ignores TERM is KILLed before the newest runs") {
  run_cancel(true);
}

TEST_CASE(
    "cancel-running: queued supersede waiters leave too; a plain exec holder is not cancelled") {
  RedisServer redis;
  TempDir dir;
  const std::string order = dir / "order", gate = dir / "gate";
  write_file(order, "");
  // A plain exec holder that ends when `gate` exists: --cancel-running leaves it alone.
  Spawned plain = spawn_rlock(
      redis, {"exec", "--lease", "3s", kName, "--", "sh", "-c",
              "echo in; while [ ! -e " + gate + " ]; do sleep 0.05; done; echo plain >> " + order});
  REQUIRE(plain.read_line(deadline(10s)) == std::optional<std::string>("in"));
  auto b = start_waiter(redis, order, "b", {"--supersede"});
  Spawned c =
      spawn_rlock(redis, {"exec", "--wait", "60s", "--owner", "c", "--supersede",
                          "--cancel-running", kName, "--", "sh", "-c", "echo c >> " + order});
  check_superseded(b, "c");
  // Two renewals of the holder (lease 3s: every second) later it still runs.
  CHECK_FALSE(plain.wait(deadline(2500ms)).has_value());
  write_file(gate, "");
  CHECK(plain.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(words_of(order) == std::vector<std::string>{"plain", "c"});
}

TEST_CASE("priority: higher first, arrival order within a level; inspect shows it") {
  RedisServer redis;
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  hold(redis);
  auto w1 = start_waiter(redis, order, "w1", {});
  auto w2 = start_waiter(redis, order, "w2", {"--priority", "5"});
  auto w3 = start_waiter(redis, order, "w3", {"--priority", "1"});
  auto w4 = start_waiter(redis, order, "w4", {"--priority", "5"});
  auto r = rlock(redis, {"inspect", kName});
  INFO("inspect: " << r.out);
  REQUIRE(r.status == 0);
  json listed = parse_json(r.out);
  REQUIRE(listed.is_array());
  // A quorum lists the lock once per member; each has the same queue.
  REQUIRE(!listed.empty());
  std::vector<std::pair<std::string, long long>> seen;
  for (const auto& w : listed[0]["waiters"])
    seen.emplace_back(w["owner"].get<std::string>(), w["priority"].get<long long>());
  CHECK(seen ==
        std::vector<std::pair<std::string, long long>>{{"w2", 5}, {"w4", 5}, {"w3", 1}, {"w1", 0}});
  for (const auto& w : listed[0]["waiters"]) CHECK(w["waited_ms"].get<long long>() < 60'000);
  auto table = rlock(redis, {"inspect", kName, "--format", "table"});
  CHECK(table.out.find("(priorities 5,5,1,0)") != std::string::npos);
  release(redis);
  for (Spawned* w : {&w1, &w2, &w3, &w4})
    CHECK(w->wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(words_of(order) == std::vector<std::string>{"w2", "w4", "w3", "w1"});
}

TEST_CASE("queue policy: bad values get one line and exit 64") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> cases = {
      {"lock", "--wait", "1s", "--priority=-1", kName},
      {"lock", "--wait", "1s", "--priority", "100", kName},
      {"lock", "--wait", "1s", "--priority", "abc", kName},
      {"exec", "--wait", "1s", "--priority", "", kName, "--", "true"},
      {"exec", "--wait", "1s", "--cancel-running", kName, "--", "true"},
      {"lock", "--wait", "1s", "--priority", "5", kName, "other"},
      {"exec", "--wait", "1s", "--supersede", kName, "other", "--", "true"},
  };
  for (const auto& args : cases) {
    auto r = rlock(redis, args);
    INFO("args: " << json(args).dump() << "\nstderr: " << r.err);
    CHECK(r.status == 64);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(redis.cmd_int({"EXISTS", "rlock:lock:{q}"}) == 0);
}

}  // namespace
}  // namespace rlock::test
