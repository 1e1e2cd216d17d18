// The lock's behaviour in time: shared owners, nested execs, grants that must be claimed,
// waiters that stop or lose their connection, requests that time out, re-entry leases.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

// The waiters' queue of lock `name` (default prefix).
std::string queue_key(const std::string& name) { return lock_key(name) + ":waiters"; }

bool queued(const RedisServer& redis, const std::string& name, long long n) {
  return poll_until([&] { return redis.cmd_int({"ZCARD", queue_key(name)}) == n; }, 10s);
}

// Reads stdout lines of `proc` until one equals `want`; false at the deadline or EOF.
bool saw_line(Spawned& proc, const std::string& want, std::chrono::milliseconds timeout = 15s) {
  const auto until = deadline(timeout);
  while (auto line = proc.read_line(until)) {
    if (*line == want) return true;
  }
  return false;
}

// A job that prints `tag` and then blocks until a line is written to `fifo`.
std::vector<std::string> blocking_job(const std::string& tag, const std::string& fifo) {
  return {"sh", "-c", "echo " + tag + "; read x < " + fifo};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void release_fifo(const std::string& fifo) { write_file(fifo, "go\n", 0600); }

TEST_CASE("exec: two concurrent execs with one RLOCK_OWNER never both run") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "hold");
  const Env shared{{"RLOCK_OWNER", "pipeline-7"}};
  auto first = spawn_rlock(
      redis, concat({"exec", "ci"}, concat({"--"}, blocking_job("first", fifo))), shared);
  REQUIRE(saw_line(first, "first"));

  auto second = rlock(redis, {"exec", "-n", "ci", "--", "echo", "second ran"}, shared);
  CHECK(second.status == 75);
  CHECK(second.out.empty());
  CHECK(second.err.find("another `rlock exec`") != std::string::npos);
  CHECK(line_count(second.err) == 1);

  release_fifo(fifo);
  CHECK(first.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("ci")}) == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("ci") + ":exec"}) == 0);
}

TEST_CASE("exec: sibling rlock calls of one job do not inherit its hold") {
  RedisServer redis;
  TempDir dir;
  auto hold = make_fifo(dir, "hold");
  auto ready = make_fifo(dir, "ready");
  // The outer job starts one inner exec in the background, waits until its command runs,
  // then tries a second inner exec with the same (inherited) RLOCK_OWNER.
  const std::string script =
      R"("$RL" --url "$URL" exec inner -- sh -c "echo > $READY; read x < $HOLD" & )"
      R"(read x < "$READY"; "$RL" --url "$URL" exec -n inner -- echo second-ran; echo "second=$?"; )"
      R"(echo > "$HOLD"; wait)";
  const Env env{{"RL", rlock_binary()}, {"URL", redis.url()}, {"READY", ready}, {"HOLD", hold}};
  auto r = rlock(redis, {"exec", "outer", "--", "sh", "-c", script}, env);
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "second=75\n");
}

TEST_CASE(
    "exec inside a hold its owner took with lock re-enters, keeps the long lease, and unlock "
    "cannot end it") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "hold");
  auto taken = rlock(redis, {"lock", "train", "--owner", "o", "--lease", "30m"});
  REQUIRE(taken.status == 0);
  const auto fence = parse_json(taken.out).at("fence").get<long long>();

  auto job = spawn_rlock(redis, {"exec", "train", "--owner", "o", "--lease", "30s", "--", "sh",
                                 "-c", "echo $RLOCK_FENCE; read x < " + fifo});
  auto line = job.read_line(deadline(10s));
  REQUIRE(line.has_value());
  CHECK(std::stoll(*line) == fence);  // a re-entry: the same hold, the same token
  CHECK(hash_of(redis, lock_key("train")) == json::object({{"o", "2"}}));
  CHECK(redis.cmd_int({"PTTL", lock_key("train")}) > 29 * 60'000);

  // The job's own `unlock` (same owner) drops the lock's level, never the running exec's.
  CHECK(rlock(redis, {"unlock", "train", "--owner", "o"}).status == 0);
  auto refused = rlock(redis, {"unlock", "train", "--owner", "o"});
  CHECK(refused.status == 75);
  CHECK(refused.err.find("running `rlock exec`") != std::string::npos);
  CHECK(hash_of(redis, lock_key("train")) == json::object({{"o", "1"}}));

  release_fifo(fifo);
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("train")}) == 0);
}

TEST_CASE("lock: re-entry never shortens the lease in force") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "long", "--owner", "o", "--lease", "30m"}).status == 0);
  auto r = rlock(redis, {"lock", "long", "--owner", "o", "--lease", "2s"});
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out).at("count") == 2);
  CHECK(parse_json(r.out).at("lease_ms").get<long long>() > 29 * 60'000);
  CHECK(redis.cmd_int({"PTTL", lock_key("long")}) > 29 * 60'000);
}

TEST_CASE("a forged grant never starts a waiting job, nor sets its fence") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "g", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto waiter =
      spawn_rlock(redis, {"exec", "--wait", "30s", "g", "--", "sh", "-c", "echo ran $RLOCK_FENCE"});
  REQUIRE(queued(redis, "g", 1));
  auto member = redis.cmd({"ZRANGE", queue_key("g"), "0", "0"}).at(0);
  auto wait_id = member.substr(member.find(':', member.find(':') + 1) + 1);
  wait_id = wait_id.substr(0, wait_id.find(':'));
  const std::string grant_channel = lock_channel("g") + ":" + wait_id;
  REQUIRE(subscribers(redis, grant_channel) == 1);
  for (const char* forged : {"granted 9223372036854775807 30000", "grant", "released"}) {
    redis.cmd({"SPUBLISH", grant_channel, forged});
    redis.cmd({"SPUBLISH", lock_channel("g"), forged});
  }
  // Each message made the waiter look again; the lock is still the holder's.
  CHECK_FALSE(waiter.read_line(deadline(1s)).has_value());
  CHECK(waiter.running());
  CHECK(hash_of(redis, lock_key("g")) == json::object({{"holder", "1"}}));

  REQUIRE(rlock(redis, {"unlock", "g", "--owner", "holder"}).status == 0);
  auto line = waiter.read_line(deadline(10s));
  REQUIRE(line.has_value());
  // The token stored where the hold was granted: on one server, that server's; on a
  // quorum, a majority's (a member that ran the release after the waiter's claim grants it
  // a reservation of its own, with a later token that is never handed out).
  const auto members = redis.members();
  size_t same = 0;
  for (const RedisServer* m : members)
    same += *line == "ran " + m->cmd_str({"GET", fence_key("g")});
  CHECK(same >= members.size() / 2 + 1);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE(
    "a SIGSTOPped waiter that is granted the lock stops blocking the queue within the claim "
    "window") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "b");
  REQUIRE(rlock(redis, {"lock", "q", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto stopped = spawn_rlock(redis, {"exec", "--wait", "60s", "q", "--", "echo", "stopped-ran"});
  REQUIRE(queued(redis, "q", 1));
  auto next = spawn_rlock(
      redis, concat({"exec", "--wait", "60s", "q", "--"}, blocking_job("next-ran", fifo)));
  REQUIRE(queued(redis, "q", 2));
  stopped.kill(SIGSTOP);

  const auto released_at = Clock::now();
  REQUIRE(rlock(redis, {"unlock", "q", "--owner", "holder"}).status == 0);
  REQUIRE(saw_line(next, "next-ran"));
  // The claim window is 2s; the old behaviour made the next waiter wait for a whole lease.
  CHECK(ms_between(released_at) < 6'000);

  // Resumed, the stopped waiter finds its grant gone and queues again behind the holder.
  stopped.kill(SIGCONT);
  REQUIRE(queued(redis, "q", 1));
  CHECK(stopped.running());
  release_fifo(fifo);
  CHECK(next.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(stopped.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(stopped.out() == "stopped-ran\n");
}

TEST_CASE("a queue entry vanishes with its wait's deadline, even while its process lives") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "d", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto stopped = spawn_rlock(redis, {"lock", "d", "--owner", "late", "--wait", "1s"});
  REQUIRE(queued(redis, "d", 1));
  stopped.kill(SIGSTOP);
  // Past the stopped waiter's deadline its entry must not receive the lock.
  ::usleep(1'500'000);
  REQUIRE(rlock(redis, {"unlock", "d", "--owner", "holder"}).status == 0);
  auto r = rlock(redis, {"lock", "-n", "d", "--owner", "newcomer"});
  CHECK(r.status == 0);
  stopped.kill(SIGCONT);
  CHECK(stopped.wait(deadline(10s)).value_or(kStillRunning) == 75);
  // On a majority (a quorum's member that the release reached last may have answered the
  // newcomer busy, and freed the lock afterwards: a minority without it).
  CHECK(redis.on_majority({"HEXISTS", lock_key("d"), "newcomer"}) == 1);
  CHECK(redis.on_majority({"HLEN", lock_key("d")}) == 1);
}

TEST_CASE(
    "a handoff to a short lease wakes the next waiter at that lease's end, not the old one's") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "s", "--owner", "long", "--lease", "40s"}).status == 0);
  auto short_one =
      spawn_rlock(redis, {"lock", "s", "--owner", "short", "--lease", "2s", "--wait", "30s"});
  REQUIRE(queued(redis, "s", 1));
  auto next = spawn_rlock(redis, {"exec", "--wait", "30s", "s", "--", "echo", "next-ran"});
  REQUIRE(queued(redis, "s", 2));
  REQUIRE(rlock(redis, {"unlock", "s", "--owner", "long"}).status == 0);
  CHECK(short_one.wait(deadline(10s)).value_or(kStillRunning) == 0);  // it holds for 2s, then dies
  const auto granted_at = Clock::now();
  CHECK(next.wait(deadline(15s)).value_or(kStillRunning) == 0);
  CHECK(next.out() == "next-ran\n");
  CHECK(ms_between(granted_at, next.exit_time()) < 8'000);
}

TEST_CASE("after a holder's lease runs out the head waiter gets the lock, never a newcomer") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "f", "--owner", "crashed", "--lease", "1500ms"}).status == 0);
  auto first = spawn_rlock(redis, {"exec", "--wait", "30s", "f", "--", "echo", "first"});
  REQUIRE(queued(redis, "f", 1));
  // Stopped, the waiter cannot take the lock the moment it frees: a newcomer could.
  first.kill(SIGSTOP);
  REQUIRE(poll_until([&] { return redis.cmd_int({"EXISTS", lock_key("f")}) == 0; }, 10s));
  CHECK(rlock(redis, {"lock", "-n", "f", "--owner", "newcomer"}).status == 75);
  first.kill(SIGCONT);
  CHECK(first.wait(deadline(15s)).value_or(kStillRunning) == 0);
  CHECK(first.out() == "first\n");
}

// An exec queued behind `name`, held by another owner for 4s from `locked`.
Spawned queue_behind_held(const RedisServer& redis, const std::string& name,
                          Clock::time_point& locked) {
  REQUIRE(rlock(redis, {"lock", name, "--owner", "holder", "--lease", "4s"}).status == 0);
  locked = Clock::now();
  auto waiter = spawn_rlock(redis, {"exec", "--wait", "30s", name, "--", "echo", "ran"});
  REQUIRE(queued(redis, name, 1));
  return waiter;
}

// The waiter ran, and not before the holder's lease would have ended: the restarted server
// forgot a hold whose job may still be running (an exec finds out at its next renewal).
void ran_after_the_forgotten_lease(Spawned& waiter, Clock::time_point locked) {
  CHECK(waiter.wait(deadline(20s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << waiter.err());
  CHECK(waiter.out() == "ran\n");
  CHECK(ms_between(locked, waiter.exit_time()) >= 3500);
}

TEST_CASE("a wait survives a Redis restart and its subscriber being killed") {
  RedisServer redis;
  Clock::time_point locked;
  auto waiter = queue_behind_held(redis, "r", locked);
  redis.cmd({"CLIENT", "KILL", "TYPE", "pubsub"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", queue_key("r")}) == 1 &&
               subscribers(redis, lock_channel("r")) == 1;
      },
      10s));
  redis.restart();  // without persistence: the holder's lock is gone with everything else
  ran_after_the_forgotten_lease(waiter, locked);
}

TEST_CASE("wake-ups in the claim window after a restart take nothing the server forgot") {
  RedisServer redis;
  Clock::time_point locked;
  auto waiter = queue_behind_held(redis, "k", locked);
  redis.restart();
  // Anyone can publish on the lock's channel: each message wakes the waiter, whose claims
  // must take nothing until the forgotten lease would have ended (the first claim after
  // the restart is answered with the empty server's token, 0).
  while (!waiter.wait(deadline(100ms)) && ms_between(locked) < 3000) {
    redis.cmd({"SPUBLISH", lock_channel("k"), "wake"});
  }
  ran_after_the_forgotten_lease(waiter, locked);
}

TEST_CASE("a command that timed out leaves no lock behind when Redis resumes") {
  RedisServer redis;
  redis.freeze();
  auto r = rlock(redis, {"--timeout", "300ms", "exec", "-n", "ghost", "--", "echo", "ran"});
  auto l = rlock(redis, {"--timeout", "300ms", "lock", "ghost2", "--owner", "o"});
  redis.thaw();
  CHECK(r.status == 69);
  CHECK(r.out.empty());
  CHECK(l.status == 69);
  // The server that did not answer is named (on a cluster the key's node, not the URL's;
  // through Sentinel the master it named).
  const std::string silent = "redis at 127.0.0.1:" + std::to_string(redis.port());
  if (test_topology() == "standalone" || test_topology() == "cluster") {
    CHECK(l.err ==
          "rlock: " + silent + " did not answer within 300ms (--timeout; tried 3 times)\n");
  } else if (test_topology() == "sentinel") {
    CHECK(l.err.find(silent + " did not answer") != std::string::npos);
  }
  // Whatever order the stalled requests and their clean-ups ran in, nothing is held.
  CHECK(rlock(redis, {"lock", "-n", "ghost", "--owner", "other"}).status == 0);
  CHECK(rlock(redis, {"lock", "-n", "ghost2", "--owner", "other"}).status == 0);
}

TEST_CASE("exec: a connection the server closed while idle does not leave the lock held") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "idle");
  auto job = spawn_rlock(redis, concat({"exec", "idle", "--"}, blocking_job("running", fifo)));
  REQUIRE(saw_line(job, "running"));
  redis.cmd({"CLIENT", "KILL", "TYPE", "normal"});
  release_fifo(fifo);
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << job.err());
  CHECK(job.err().empty());
  CHECK(redis.cmd_int({"EXISTS", lock_key("idle")}) == 0);
}

}  // namespace
}  // namespace rlock::test
