// Several locks as one (`lock A B`, `exec A B -- CMD`, `unlock A B`): all of them or none,
// taken in sorted order with the earlier ones renewed while a later one is waited for, so
// that jobs naming them in any order neither overlap nor deadlock. "a" and "b" hash to
// different cluster slots: on a cluster each lock lives in its own.
#include <doctest/doctest.h>
#include <signal.h>

#include <regex>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace rlock::test {
namespace {

const std::string kAlice = "alice-host:101:a1";
const std::string kBob = "bob-host:202:b2";

bool held(const RedisServer& redis, const std::string& name) {
  return redis.cmd_int({"EXISTS", lock_key(name)}) == 1;
}

bool queued_on(const RedisServer& redis, const std::string& name, long long n) {
  return poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key(name) + ":waiters"}) == n;
      },
      10s);
}

long long stored_fence(const RedisServer& redis, const std::string& name) {
  return redis.cmd_int({"GET", fence_key(name)});
}

// The shell a job runs for a nested rlock: $RL the binary, $URL the server.
Env nested_env(const RedisServer& redis) {
  return {{"RL", rlock_binary()}, {"URL", redis.topology_url()}};
}

TEST_CASE("multilock: lock A B takes both or neither, and unlock A B releases both") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "b", "--owner", kBob}).status == 0);

  // b busy: a is given back, whether or not the request waited for b.
  for (std::vector<std::string> wait : {std::vector<std::string>{}, {"--wait", "300ms"}}) {
    std::vector<std::string> args{"lock", "a", "b", "--owner", kAlice};
    args.insert(args.end(), wait.begin(), wait.end());
    auto r = rlock(redis, args);
    INFO("stderr: " << r.err);
    CHECK(r.status == 75);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("lock 'b' is held by " + kBob) != std::string::npos);
    CHECK(r.err.find("none of locks 'a' and 'b' is held") != std::string::npos);
    auto j = parse_json(r.out);
    CHECK(j["acquired"] == false);
    CHECK(j["busy"]["name"] == "b");
    CHECK(j["busy"]["holders"] == json::array({{{"owner", kBob}, {"count", 1}}}));
    CHECK_FALSE(held(redis, "a"));
    CHECK(redis.cmd_int({"EXISTS", lock_key("a") + ":waiters"}) == 0);
  }
  CHECK(rlock(redis, {"lock", "a", "b", "--owner", kAlice, "-E", "9"}).status == 9);
  CHECK_FALSE(held(redis, "a"));

  // Free: both, reported in the order given, each as a single `lock` reports it.
  REQUIRE(rlock(redis, {"unlock", "b", "--owner", kBob}).status == 0);
  auto r = rlock(redis, {"lock", "b", "a", "--owner", kAlice, "--lease", "20s"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto one = [&](const std::string& name) {
    return json::object({{"name", name},
                         {"owner", kAlice},
                         {"acquired", true},
                         {"count", 1},
                         {"fence", stored_fence(redis, name)},
                         {"lease_ms", 20000}});
  };
  CHECK(parse_json(r.out) == json::object({{"acquired", true}, {"locks", {one("b"), one("a")}}}));
  CHECK(hash_of(redis, lock_key("a")) == json::object({{kAlice, "1"}}));
  CHECK(hash_of(redis, lock_key("b")) == json::object({{kAlice, "1"}}));

  r = rlock(redis, {"unlock", "a", "b", "--owner", kAlice});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) ==
        json::object({{"locks",
                       {{{"name", "a"}, {"owner", kAlice}, {"released", true}, {"count", 0}},
                        {{"name", "b"}, {"owner", kAlice}, {"released", true}, {"count", 0}}}}}));
  CHECK_FALSE(held(redis, "a"));
  CHECK_FALSE(held(redis, "b"));

  // One not held: the other is unlocked all the same; the line names both outcomes.
  REQUIRE(rlock(redis, {"lock", "b", "--owner", kAlice}).status == 0);
  r = rlock(redis, {"unlock", "a", "b", "--owner", kAlice});
  CHECK(r.status == 75);
  CHECK(r.err == "rlock: lock 'a' is not held; nothing to unlock (unlocked all the same: 'b')\n");
  CHECK_FALSE(held(redis, "b"));

  // --force releases every one, whoever holds it.
  REQUIRE(rlock(redis, {"lock", "a", "--owner", kAlice}).status == 0);
  REQUIRE(rlock(redis, {"lock", "b", "--owner", kBob}).status == 0);
  r = rlock(redis, {"unlock", "--force", "a", "b"});
  CHECK(r.status == 0);
  auto forced = parse_json(r.out)["locks"];
  REQUIRE(forced.size() == 2);
  CHECK(forced[0]["holders"] == json::array({{{"owner", kAlice}, {"count", 1}}}));
  CHECK(forced[1]["holders"] == json::array({{{"owner", kBob}, {"count", 1}}}));
  CHECK_FALSE(held(redis, "a"));
  CHECK_FALSE(held(redis, "b"));
}

TEST_CASE("multilock: a key of another type fails the request and leaves nothing held") {
  RedisServer redis;
  redis.cmd({"SET", lock_key("b"), "not a lock"});
  auto r = rlock(redis, {"exec", "a", "b", "--", "echo", "ran"});
  CHECK(r.status == 65);
  CHECK(line_count(r.err) == 1);
  CHECK(r.out.empty());
  CHECK_FALSE(held(redis, "a"));
  r = rlock(redis, {"lock", "a", "b", "--owner", kAlice});
  CHECK(r.status == 65);
  CHECK_FALSE(held(redis, "a"));
}

TEST_CASE("multilock: unlock of a held name beside a key of another type reports the release") {
  // Each name is unlocked on its own: the one that fails does not hide, or stop, the others.
  RedisServer redis;
  redis.cmd({"SET", lock_key("b"), "not a lock"});
  const std::vector<std::vector<std::string>> forms = {
      {"unlock", "a", "b", "--owner", kAlice},
      {"unlock", "b", "a", "--owner", kAlice},
      {"unlock", "--force", "b", "a"},
  };
  for (const auto& form : forms) {
    CAPTURE(form);
    REQUIRE(rlock(redis, {"lock", "a", "--owner", kAlice}).status == 0);
    auto r = rlock(redis, form);
    INFO("stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.status == 65);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("lock 'b'") != std::string::npos);
    CHECK(r.err.find("(unlocked all the same: 'a')") != std::string::npos);
    const json locks = parse_json(r.out).at("locks");
    REQUIRE(locks.size() == 1);
    CHECK(locks[0].at("name") == "a");
    CHECK_FALSE(held(redis, "a"));
  }
}

TEST_CASE("multilock: the job gets the first name's fence as before and every fence") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "a", "--owner", kAlice}).status == 0);  // a's fence moves on
  REQUIRE(rlock(redis, {"unlock", "a", "--owner", kAlice}).status == 0);
  auto r = rlock(redis, {"exec", "--owner", "job", "b", "a", "--", "sh", "-c",
                         R"(echo "$RLOCK_NAME"; echo "$RLOCK_FENCE"; echo "$RLOCK_FENCES"; )"
                         R"(echo "$RLOCK_HOLDS")"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto a = std::to_string(stored_fence(redis, "a"));
  const auto b = std::to_string(stored_fence(redis, "b"));
  CHECK(a != b);
  std::istringstream out(r.out);
  std::string name, fence, fences_b, fences_a, holds;
  std::getline(out, name);
  std::getline(out, fence);
  std::getline(out, fences_b);
  std::getline(out, fences_a);
  std::getline(out, holds);
  CHECK(name == "b");
  CHECK(fence == b);
  CHECK(fences_b == "b=" + b);
  CHECK(fences_a == "a=" + a);
  // One "<hold id>:<owner>" per lock.
  CHECK(std::regex_match(holds, std::regex("[0-9a-f]{16}:job [0-9a-f]{16}:job")));
  CHECK_FALSE(held(redis, "a"));
  CHECK_FALSE(held(redis, "b"));

  // One name: RLOCK_FENCES has its one line.
  r = rlock(redis, {"exec", "a", "--", "sh", "-c", R"(echo "$RLOCK_FENCES")"});
  CHECK(r.out == "a=" + std::to_string(stored_fence(redis, "a")) + "\n");
}

// Two jobs naming the same locks in opposite orders, and jobs needing only one of them,
// many rounds at once: each job appends to the log of every lock it holds (O_APPEND) when
// it starts and ends, so a lock's log must alternate start/end of one job at a time. All
// must finish: no deadlock.
TEST_CASE("multilock: execs naming the locks in opposite orders never overlap or deadlock") {
  RedisServer redis;
  TempDir dir;
  const std::string job = R"(for l in $LOCKS; do echo "s $$" >> "$DIR/$l.log"; done; sleep 0.01; )"
                          R"(for l in $LOCKS; do echo "e $$" >> "$DIR/$l.log"; done)";
  const std::vector<std::vector<std::string>> jobs = {{"a", "b"}, {"b", "a"}, {"a", "b"},
                                                      {"b", "a"}, {"a"},      {"b"}};
  std::vector<Spawned> loops;
  for (const auto& names : jobs) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
    const std::string loop = R"(for i in $(seq 8); do "$RL" --url "$URL" exec --wait 30s )" + list +
                             R"( -- sh -c "$JOB" || exit 1; done)";
    Env env = nested_env(redis);
    env.insert(env.end(), {{"DIR", dir.path().string()}, {"JOB", job}, {"LOCKS", list}});
    loops.emplace_back(std::vector<std::string>{"sh", "-c", loop}, env);
  }
  const auto until = deadline(90s);
  for (auto& proc : loops) {
    auto status = proc.wait(until);
    INFO("stderr: " << proc.err());
    REQUIRE(status.has_value());
    CHECK(*status == 0);
  }
  for (const std::string name : {"a", "b"}) {
    CAPTURE(name);
    std::istringstream log(read_file(dir / (name + ".log")));
    std::string line, open;
    int runs = 0;
    while (std::getline(log, line)) {
      if (open.empty()) {
        REQUIRE(line.rfind("s ", 0) == 0);
        open = line.substr(2);
      } else {
        REQUIRE(line == "e " + open);
        open.clear();
        ++runs;
      }
    }
    CHECK(open.empty());
    CHECK(runs == 5 * 8);  // four jobs of both and one of each alone, 8 rounds each
    CHECK_FALSE(held(redis, name));
  }
}

TEST_CASE("multilock: a waiter renews what it holds while it waits for the next lock") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "b", "--owner", kBob}).status == 0);
  auto waiter = spawn_rlock(redis, {"exec", "--wait", "20s", "--lease", "1s", "--owner", kAlice,
                                    "b", "a", "--", "echo", "ran"});
  REQUIRE(queued_on(redis, "b", 1));
  CHECK(hash_of(redis, lock_key("a")) == json::object({{kAlice, "1"}}));
  // Three leases later a is still held: renewed while the waiter sleeps on b.
  std::this_thread::sleep_for(3s);
  CHECK(hash_of(redis, lock_key("a")) == json::object({{kAlice, "1"}}));
  const long long pttl = redis.cmd_int({"PTTL", lock_key("a")});
  CHECK(pttl > 0);
  CHECK(pttl <= 1000);
  CHECK(waiter.running());

  REQUIRE(rlock(redis, {"unlock", "b", "--owner", kBob}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << waiter.err());
  CHECK(waiter.out() == "ran\n");
  CHECK_FALSE(held(redis, "a"));
  CHECK_FALSE(held(redis, "b"));
}

TEST_CASE("multilock: an earlier lock lost during the later wait is taken again first") {
  // Forced and taken by carol while the request waits for b: when b comes, nothing is
  // reported or run on a (its last renewal still showed it held); b goes back and the
  // request queues for a again.
  const std::vector<std::string> cases[] = {
      {"lock", "--wait", "20s", "--owner", kAlice, "a", "b"},
      {"exec", "--wait", "20s", "--owner", kAlice, "a", "b", "--", "echo", "ran"},
  };
  for (const auto& args : cases) {
    CAPTURE(args[0]);
    RedisServer redis;
    REQUIRE(rlock(redis, {"lock", "b", "--owner", kBob}).status == 0);
    auto waiter = spawn_rlock(redis, args);
    REQUIRE(queued_on(redis, "b", 1));
    REQUIRE(held(redis, "a"));
    REQUIRE(rlock(redis, {"unlock", "--force", "a"}).status == 0);
    auto carol = rlock(redis, {"lock", "a", "--owner", "carol"});
    REQUIRE(carol.status == 0);
    const long long carol_fence = parse_json(carol.out)["fence"];
    REQUIRE(rlock(redis, {"unlock", "b", "--owner", kBob}).status == 0);

    REQUIRE(queued_on(redis, "a", 1));
    CHECK(waiter.running());
    CHECK(waiter.out().empty());
    CHECK(hash_of(redis, lock_key("a")) == json::object({{"carol", "1"}}));
    CHECK_FALSE(held(redis, "b"));

    REQUIRE(rlock(redis, {"unlock", "a", "--owner", "carol"}).status == 0);
    CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
    INFO("stderr: " << waiter.err());
    if (args[0] == "lock") {
      auto locks = parse_json(waiter.out())["locks"];
      CHECK(locks[0]["name"] == "a");
      CHECK(locks[0]["fence"].get<long long>() > carol_fence);
      CHECK(hash_of(redis, lock_key("a")) == json::object({{kAlice, "1"}}));
      CHECK(hash_of(redis, lock_key("b")) == json::object({{kAlice, "1"}}));
    } else {
      CHECK(waiter.out() == "ran\n");
      CHECK_FALSE(held(redis, "a"));
    }
  }
}

TEST_CASE("multilock: a waiter stopped past the earlier lock's lease takes it again first") {
  // SIGSTOP while it waits for b: a's lease runs out and carol takes a; b comes free while
  // the waiter is stopped. Continued, it must not report a: it queues for a again.
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "b", "--owner", kBob}).status == 0);
  auto waiter =
      spawn_rlock(redis, {"lock", "--wait", "30s", "--lease", "2s", "--owner", kAlice, "a", "b"});
  REQUIRE(queued_on(redis, "b", 1));
  REQUIRE(held(redis, "a"));
  waiter.kill(SIGSTOP);
  REQUIRE(poll_until([&] { return !held(redis, "a"); }, 10s));
  REQUIRE(rlock(redis, {"lock", "a", "--owner", "carol"}).status == 0);
  REQUIRE(rlock(redis, {"unlock", "b", "--owner", kBob}).status == 0);
  waiter.kill(SIGCONT);

  REQUIRE(queued_on(redis, "a", 1));
  CHECK(waiter.running());
  CHECK(waiter.out().empty());
  CHECK(hash_of(redis, lock_key("a")) == json::object({{"carol", "1"}}));
  REQUIRE(rlock(redis, {"unlock", "a", "--owner", "carol"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << waiter.err());
  CHECK(hash_of(redis, lock_key("a")) == json::object({{kAlice, "1"}}));
  CHECK(hash_of(redis, lock_key("b")) == json::object({{kAlice, "1"}}));
}

TEST_CASE("multilock: a stop signal while waiting for the later lock gives back the earlier") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "b", "--owner", kBob}).status == 0);
  const std::vector<std::string> cases[] = {
      {"lock", "--wait", "20s", "--owner", kAlice, "a", "b"},
      {"exec", "--wait", "20s", "--owner", kAlice, "a", "b", "--", "echo", "ran"},
  };
  for (const auto& args : cases) {
    CAPTURE(args[0]);
    auto waiter = spawn_rlock(redis, args);
    REQUIRE(queued_on(redis, "b", 1));
    REQUIRE(held(redis, "a"));
    waiter.kill(SIGTERM);
    auto status = waiter.wait(deadline(10s));
    INFO("stderr: " << waiter.err());
    CHECK(status.value_or(kStillRunning) == 128 + SIGTERM);
    CHECK(waiter.out().empty());
    CHECK(waiter.err().find("none of locks 'a' and 'b' is held") != std::string::npos);
    CHECK_FALSE(held(redis, "a"));
    CHECK(redis.cmd_int({"ZCARD", lock_key("b") + ":waiters"}) == 0);
  }
}

TEST_CASE("multilock: a member lost under the job stops it with 76") {
  struct Case {
    const char* what;
    std::vector<std::string> cut;  // a redis command, or rlock arguments
    bool via_rlock;
  };
  const Case cases[] = {
      {"unlock --force b", {"unlock", "--force", "b"}, true},
      {"DEL a", {"DEL", lock_key("a")}, false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    RedisServer redis;
    auto job = spawn_rlock(redis, {"exec", "--lease", "3s", "--owner", "job", "a", "b", "--", "sh",
                                   "-c", "echo $$; exec sleep 60"});
    auto line = job.read_line(deadline(10s));
    REQUIRE(line.has_value());
    PidGuard child(static_cast<pid_t>(std::stol(*line)));
    if (c.via_rlock) {
      REQUIRE(rlock(redis, c.cut).status == 0);
    } else {
      redis.cmd(c.cut);
    }
    auto status = job.wait(deadline(10s));
    INFO("stderr: " << job.err());
    CHECK(status.value_or(kStillRunning) == 76);
    CHECK(child.wait_gone(2s));
    const std::string lost = c.via_rlock ? "lock 'b'" : "lock 'a'";
    CHECK(job.err().find("lock lost: " + lost) != std::string::npos);
    CHECK_FALSE(held(redis, "a"));
    CHECK_FALSE(held(redis, "b"));
  }
}

// One name is a MultiLock of one, supervised by that lock's own hold: its lost line is a
// lock's, not a member's ("lock 'a': ...").
TEST_CASE("multilock: exec of one name lost under the job says so as a single lock") {
  RedisServer redis;
  auto job = spawn_rlock(redis, {"exec", "--lease", "3s", "--owner", "job", "a", "--", "sh", "-c",
                                 "echo $$; exec sleep 60"});
  auto line = job.read_line(deadline(10s));
  REQUIRE(line.has_value());
  PidGuard child(static_cast<pid_t>(std::stol(*line)));
  REQUIRE(rlock(redis, {"unlock", "--force", "a"}).status == 0);
  auto status = job.wait(deadline(10s));
  INFO("stderr: " << job.err());
  CHECK(status.value_or(kStillRunning) == 76);
  CHECK(child.wait_gone(2s));
  CHECK(job.err().find("lock lost: the lock is no longer held by job (expired, deleted or "
                       "forced)") != std::string::npos);
}

TEST_CASE("multilock: inside exec a b, a request that only its release could grant is refused") {
  RedisServer redis;
  struct Case {
    std::string inner;
    const char* left_free;  // a lock the inner request took before it was refused
  };
  const Case cases[] = {
      {R"("$RL" --url "$URL" exec --wait inf b -- echo ran)", nullptr},
      {R"("$RL" --url "$URL" exec --wait inf a -- echo ran)", nullptr},
      // a0 sorts before b: taken, then given back when b is refused.
      {R"("$RL" --url "$URL" exec --wait inf b a0 -- echo ran)", "a0"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.inner);
    auto r = rlock(redis, {"exec", "a", "b", "--", "sh", "-c", c.inner + "; echo \"inner=$?\""},
                   nested_env(redis));
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "inner=65\n");
    CHECK(r.err.find("would wait for itself") != std::string::npos);
    if (c.left_free) CHECK_FALSE(held(redis, c.left_free));
    CHECK_FALSE(held(redis, "a"));
    CHECK_FALSE(held(redis, "b"));
  }
}

TEST_CASE("multilock: --shared holds every name shared, --min-hold keeps every name") {
  RedisServer redis;
  CHECK(rlock(redis, {"lock", "-s", "a", "b", "--owner", "r1"}).status == 0);
  CHECK(rlock(redis, {"lock", "-s", "b", "a", "--owner", "r2"}).status == 0);
  auto r = rlock(redis, {"lock", "a", "b", "--owner", "w"});
  CHECK(r.status == 75);
  CHECK(parse_json(r.out)["busy"]["name"] == "a");
  CHECK(rlock(redis, {"unlock", "-s", "a", "b", "--owner", "r1"}).status == 0);
  CHECK(rlock(redis, {"unlock", "-s", "a", "b", "--owner", "r2"}).status == 0);
  CHECK(rlock(redis, {"lock", "a", "b", "--owner", "w"}).status == 0);
  CHECK(rlock(redis, {"unlock", "--force", "a", "b"}).status == 0);

  r = rlock(redis, {"exec", "--min-hold", "5s", "a", "b", "--", "true"});
  CHECK(r.status == 0);
  for (const std::string name : {"a", "b"}) {
    CAPTURE(name);
    CHECK(held(redis, name));
    CHECK(redis.cmd_int({"PTTL", lock_key(name)}) > 2000);
  }
}

TEST_CASE("multilock: bad names are usage errors, in one line") {
  RedisServer redis;
  std::vector<std::string> many{"lock"};
  for (int i = 0; i < 17; ++i) many.push_back("n" + std::to_string(i));
  const std::vector<std::string> cases[] = {
      {"lock"},
      {"exec", "--", "true"},
      {"lock", "a", "-b"},
      {"lock", "a", "b", "a"},
      {"exec", "a", "a", "--", "true"},
      {"unlock", "a", "a", "--owner", "x"},
      {"lock", "a", ""},
      many,
  };
  for (const auto& args : cases) {
    CAPTURE(args);
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.out.empty());
  }
  CHECK(redis.cmd({"KEYS", "*"}).empty());
}

}  // namespace
}  // namespace rlock::test
