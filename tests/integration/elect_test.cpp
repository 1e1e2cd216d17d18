// rlock elect: candidates lead one at a time in arrival order, a dead leader's job is gone
// before the next leads, and --observe prints the leader at every change, never polling.
#include <doctest/doctest.h>
#include <signal.h>

#include "failover_jobs.hpp"
#include "harness.hpp"
#include "util/timestamp.hpp"

namespace rlock::test {
namespace {

using rlock::parse_timestamp;

const std::string kObserveSuffix = ":observe";

// An observer of `name`, subscribed (so that no change after this returns is missed),
// with its first line (the leader now) read into `first`.
Spawned start_observer(const RedisServer& redis, const std::string& name, json& first) {
  Spawned observer = spawn_rlock(redis, {"elect", "--observe", name});
  auto line = observer.read_line(deadline(10s));
  REQUIRE(line);
  first = parse_json(*line);
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel(name) + kObserveSuffix) >= 1; },
                     10s));
  return observer;
}

json next_leader(Spawned& observer, std::chrono::milliseconds within = 10s) {
  auto line = observer.read_line(deadline(within));
  REQUIRE_MESSAGE(line, observer.err());
  return parse_json(*line);
}

TEST_CASE("elect: candidates lead one at a time, in arrival order") {
  RedisServer redis;
  TempDir dir;
  const std::string log = (dir.path() / "log").string(), go = make_fifo(dir, "go");
  write_file(log, "");
  std::vector<Spawned> candidates;
  for (int i = 0; i < 3; ++i) {
    const std::string me = std::to_string(i);
    // The first leader's job holds on until the others are queued.
    const std::string hold = i == 0 ? "read x < " + go + "; " : "sleep 0.2; ";
    candidates.push_back(spawn_rlock(
        redis,
        {"elect", "--lease", "5s", "--owner", "cand-" + me, "term", "--", "sh", "-c",
         "echo start " + me + " >> " + log + "; " + hold + "echo end " + me + " >> " + log}));
    // The first leads (its job started) before the next starts; each later one queues
    // before the next starts.
    if (i == 0) REQUIRE(poll_until([&] { return !read_file(log).empty(); }, 10s, 2ms));
    if (i > 0) REQUIRE(poll_until([&] { return live_waiters(redis, "term") == i; }, 10s, 2ms));
  }
  write_file(go, "\n");
  for (auto& c : candidates) CHECK(c.wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(read_file(log) == "start 0\nend 0\nstart 1\nend 1\nstart 2\nend 2\n");
}

TEST_CASE(
    "elect: a leader killed with SIGKILL leads no more, and its job is dead before the next "
    "leads") {
  RedisServer redis;
  TempDir dir;
  const std::string seen = (dir.path() / "seen").string();
  Spawned first = spawn_rlock(redis, {"elect", "--lease", "1500ms", "--owner", "first", "dead",
                                      "--", "sh", "-c", "echo $$; exec sleep 60"});
  auto job = first.read_line(deadline(10s));
  REQUIRE(job);
  Spawned second = spawn_rlock(
      redis,
      {"elect", "--lease", "5s", "--owner", "second", "dead", "--", "sh", "-c",
       // Dead: gone, or a zombie nobody reaped yet (kill -0 succeeds on one).
       "s=$(cut -d' ' -f3 /proc/" + *job + "/stat 2>/dev/null); " +
           "if [ -z \"$s\" ] || [ \"$s\" = Z ]; then echo dead; else echo alive; fi > " + seen});
  REQUIRE(poll_until([&] { return live_waiters(redis, "dead") == 1; }, 10s, 2ms));
  first.kill(SIGKILL);
  CHECK(second.wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(read_file(seen) == "dead\n");
}

TEST_CASE("elect --observe: the leader now, then one line per change, null when nobody leads") {
  RedisServer redis;
  TempDir dir;
  const std::string go = make_fifo(dir, "go");
  json now;
  Spawned observer = start_observer(redis, "obs", now);
  CHECK(now == json{{"name", "obs"}, {"leader", nullptr}});

  // A leader by elect, announced by its acquisition: its owner and the fence its job has.
  const long long before_ms = std::stoll(redis.cmd({"TIME"}).at(0)) * 1000;
  Spawned leader = spawn_rlock(redis, {"elect", "--owner", "lead-1", "--note", "host-a", "obs",
                                       "--", "sh", "-c", "echo $RLOCK_FENCE; read x < " + go});
  json led = next_leader(observer);
  CHECK(led["name"] == "obs");
  CHECK(led["leader"]["owner"] == "lead-1");
  CHECK(led["leader"]["note"] == "host-a");
  // Since when it leads, by the server's clock: RFC 3339 UTC with milliseconds.
  const std::string since = led["leader"]["since"].get<std::string>();
  CHECK(since.size() == 24);
  CHECK(since.back() == 'Z');
  const long long since_ms = parse_timestamp(since, "since");
  CHECK(since_ms >= before_ms);
  CHECK(since_ms <= std::stoll(redis.cmd({"TIME"}).at(0)) * 1000 + 1000);
  auto fence = leader.read_line(deadline(10s));
  REQUIRE(fence);
  CHECK(std::to_string(led["leader"]["fence"].get<long long>()) == *fence);

  // Its end is a release: published, so nobody leads.
  write_file(go, "\n");
  CHECK(leader.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(next_leader(observer) == json{{"name", "obs"}, {"leader", nullptr}});

  // Any exclusive holder leads; one that never renews is gone at its lease's end.
  REQUIRE(rlock(redis, {"lock", "--owner", "plain", "--lease", "700ms", "obs"}).status == 0);
  CHECK(next_leader(observer)["leader"]["owner"] == "plain");
  CHECK(next_leader(observer, 5s) == json{{"name", "obs"}, {"leader", nullptr}});

  observer.kill(SIGTERM);
  CHECK(observer.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(lines_of(observer.out()).size() == 5);
}

TEST_CASE("elect --observe: a hand-off from leader to candidate is one change, not two") {
  RedisServer redis;
  TempDir dir;
  const std::string go_a = make_fifo(dir, "a"), go_b = make_fifo(dir, "b");
  json now;
  Spawned observer = start_observer(redis, "hand", now);
  Spawned a =
      spawn_rlock(redis, {"elect", "--owner", "a", "hand", "--", "sh", "-c", "read x < " + go_a});
  CHECK(next_leader(observer)["leader"]["owner"] == "a");
  // Each leads until the test has seen it lead: a read is a snapshot, and a leadership
  // shorter than a read's round trip may pass unseen.
  Spawned b =
      spawn_rlock(redis, {"elect", "--owner", "b", "hand", "--", "sh", "-c", "read x < " + go_b});
  REQUIRE(poll_until([&] { return live_waiters(redis, "hand") == 1; }, 10s, 2ms));
  write_file(go_a, "\n");
  const json handed = next_leader(observer);
  INFO("observer: " << observer.out() << observer.err());
  CHECK(handed["leader"]["owner"] == "b");
  write_file(go_b, "\n");
  CHECK(next_leader(observer) == json{{"name", "hand"}, {"leader", nullptr}});
  CHECK(Spawned::wait_all({&a, &b}, deadline(10s)));
  observer.kill(SIGINT);
  CHECK(observer.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

// Whatever the topology under test: the observer follows a Sentinel master to the replica
// it promotes, and reports what the new master holds.
TEST_CASE("elect --observe: across a Sentinel failover it follows the new master") {
  if (test_topology() != "standalone") return;  // its own Sentinel deployment: once is enough
  SentinelSetup sentinel;
  RedisServer& master = sentinel.current_master();
  RedisServer& replica = &master == &sentinel.data(0) ? sentinel.data(1) : sentinel.data(0);
  REQUIRE(on(sentinel.url(), {"lock", "--owner", "before", "--lease", "60s", "fo"}).status == 0);
  master.cmd({"WAIT", "1", "5000"});
  Spawned observer = spawn_on(sentinel.url(), {"elect", "--observe", "fo"});
  auto first = observer.read_line(deadline(10s));
  REQUIRE(first);
  CHECK(parse_json(*first)["leader"]["owner"] == "before");
  failover_to(sentinel, replica);
  // Deposed on the new master: only an observer that reconnected there hears of it.
  REQUIRE(on(sentinel.url(), {"unlock", "--force", "fo"}).status == 0);
  json now = next_leader(observer, 20s);
  CHECK(now == json{{"name", "fo"}, {"leader", nullptr}});
  REQUIRE(on(sentinel.url(), {"lock", "--owner", "after", "--lease", "60s", "fo"}).status == 0);
  CHECK(next_leader(observer)["leader"]["owner"] == "after");
  observer.kill(SIGTERM);
  CHECK(observer.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("elect: bad input is one line and exit 64, with nothing written") {
  RedisServer redis;
  const auto before = snapshot(redis);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"elect", "e"}, "missing '--' before the command"},
      {{"elect", "--observe", "e", "--", "true"}, "runs no command"},
      {{"elect", "--observe", "--command", "true", "e"}, "runs no command"},
      {{"elect", "--wait", "5s", "e", "--", "true"}, "unknown option '--wait'"},
      {{"elect", "a", "b", "--", "true"}, "one NAME"},
      {{"elect", "--observe", ""}, "name"},
      {{"elect", "--lease", "0", "e", "--", "true"}, "--lease"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    auto r = rlock(redis, c.args);
    CHECK(r.status == 64);
    CHECK(r.out.empty());
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(snapshot(redis) == before);
}

}  // namespace
}  // namespace rlock::test
