// `rlock exec`: mutual exclusion between real processes, lease renewal, lost locks,
// signals, the guardian of a SIGKILLed rlock, exit statuses and the child's environment.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "harness.hpp"

namespace rlock::test {
namespace {

// Reads the next stdout line of `proc` as a pid (the job prints `$$` when it is running).
pid_t read_pid(Spawned& proc) {
  auto line = proc.read_line(deadline(10s));
  INFO("stdout: " << proc.out() << "\nstderr: " << proc.err());
  REQUIRE(line.has_value());
  return static_cast<pid_t>(std::stol(*line));
}

TEST_CASE("exec: 16 processes x 50 locked increments of one file lose no update") {
  RedisServer redis;
  TempDir dir;
  const std::string counter = dir / "counter";
  write_file(counter, "0\n");

  // RL, URL and F come through the environment, which rlock passes on to the job.
  const std::string loop =
      R"(for i in $(seq 50); do "$RL" --url "$URL" exec --wait 60s counter -- )"
      R"(sh -c 'n=$(cat "$F"); sleep 0.005; echo $((n+1)) > "$F"' || exit 1; done)";
  const Env env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}, {"F", counter}};
  std::vector<Spawned> loops;
  for (int i = 0; i < 16; ++i) loops.emplace_back(std::vector<std::string>{"sh", "-c", loop}, env);

  const auto until = deadline(150s);
  for (auto& proc : loops) {
    auto status = proc.wait(until);
    INFO("stderr: " << proc.err());
    REQUIRE(status.has_value());
    CHECK(*status == 0);
  }
  CHECK(read_file(counter) == "800\n");
  CHECK(redis.cmd_int({"EXISTS", lock_key("counter")}) == 0);
}

TEST_CASE("exec: a SIGKILLed rlock's job is killed by its guardian and the lock frees by lease") {
  RedisServer redis;
  auto job = spawn_rlock(redis, {"exec", "--lease", "2s", "--kill-after", "1s", "--owner", "job",
                                 "G", "--", "sh", "-c", "echo $$; exec sleep 60"});
  PidGuard sleeper(read_pid(job));
  REQUIRE(hash_of(redis, lock_key("G")) == json::object({{"job", "1"}}));

  job.kill(SIGKILL);
  const auto killed_at = Clock::now();
  CHECK(job.wait(deadline(5s)).value_or(kStillRunning) == 128 + SIGKILL);

  // The job dies within kill-after + lease of rlock's death.
  CHECK(sleeper.wait_gone(3s));
  CHECK(ms_between(killed_at) <= 3000);

  // Someone else gets the lock within lease + 1s of the kill.
  auto r = rlock(redis, {"lock", "--wait", "10s", "G", "--owner", "other"});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out)["owner"] == "other");
  CHECK(ms_between(killed_at) <= 3000);
}

TEST_CASE("exec: renewal keeps a 1s lease for a 4s job; the waiter gets it only afterwards") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir / "marker";
  // The job's last act writes the marker; the waiter's command, which runs only once the
  // waiter holds the lock, must find it. (Comparing the two rlock processes' exit times
  // would race: the holder exits a moment after its release has already woken the waiter.)
  auto job = spawn_rlock(redis, {"exec", "--lease", "1s", "--owner", "job", "R", "--", "sh", "-c",
                                 "echo $RLOCK_FENCE; sleep 4; echo finished > \"$0\"", marker});
  auto fence_line = job.read_line(deadline(10s));
  REQUIRE(fence_line.has_value());
  const long long job_fence = std::stoll(*fence_line);

  auto waiter = spawn_rlock(redis, {"exec", "--wait", "20s", "--owner", "w", "R", "--", "sh", "-c",
                                    "cat \"$0\" && echo $RLOCK_FENCE", marker});
  REQUIRE(Spawned::wait_all({&job, &waiter}, deadline(20s)));
  INFO("job stderr: " << job.err() << "\nwaiter stderr: " << waiter.err());
  CHECK(job.wait(Clock::now()).value_or(kStillRunning) == 0);
  CHECK(waiter.wait(Clock::now()).value_or(kStillRunning) == 0);
  REQUIRE(waiter.read_line(deadline(1s)) == std::optional<std::string>("finished"));
  auto waiter_fence = waiter.read_line(deadline(1s));
  REQUIRE(waiter_fence.has_value());
  CHECK(std::stoll(*waiter_fence) > job_fence);
}

TEST_CASE("exec: a lock deleted under the job stops it and rlock exits 76") {
  RedisServer redis;
  auto job = spawn_rlock(redis, {"exec", "--lease", "3s", "--owner", "job", "D", "--", "sh", "-c",
                                 "echo $$; exec sleep 60"});
  PidGuard child(read_pid(job));

  redis.cmd({"DEL", lock_key("D")});
  const auto deleted_at = Clock::now();
  auto status = job.wait(deadline(10s));
  INFO("stderr: " << job.err());
  REQUIRE(status.has_value());
  CHECK(*status == 76);
  CHECK(ms_between(deleted_at, job.exit_time()) <= 2000);  // lease/3 + 1s
  CHECK(child.wait_gone(1s));
}

// Unreachable Redis: renewals fail, and at the lease deadline (monotonic clock) rlock must
// stop the job, since someone else may get the lock from then on. Table: the server dies
// (connections refused), or it freezes (connections hang; the default --timeout of 5s is
// longer than the lease).
TEST_CASE("exec: Redis unreachable until the lease deadline stops the job with 76") {
  struct Case {
    const char* what;
    bool freeze;
  };
  const Case cases[] = {{"server stopped", false}, {"server frozen", true}};
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.what));
    RedisServer redis;
    auto job = spawn_rlock(redis, {"exec", "--lease", "2s", "--kill-after", "1s", "U", "--", "sh",
                                   "-c", "echo $$; exec sleep 60"});
    PidGuard child(read_pid(job));
    const auto cut_at = Clock::now();
    if (c.freeze) {
      redis.freeze();
    } else {
      redis.stop();
    }
    CHECK(child.wait_gone(3500ms));  // within the lease (+ a renewal period of slack)
    auto status = job.wait(deadline(10s));
    INFO("stderr: " << job.err());
    CHECK(status.value_or(kStillRunning) == 76);
    CHECK(ms_between(cut_at, job.exit_time()) <= 4000);
    redis.thaw();
  }
}

// A renewal waits for a frozen server until the stop point; the job ends in the meantime,
// before the lease deadline: it ran under the hold all along, so rlock exits with the job's
// status and says only that the release could not be confirmed. With a 2 s lease the
// renewal is due about 0.4 s before the stop point, and its wait (at least 500 ms) would
// outlast the job and the stop point: the job's end cuts that wait short.
TEST_CASE("exec: a job that ends while a renewal waits for a frozen server keeps its status") {
  const std::vector<std::vector<std::string>> cases = {
      {"--lease", "6s", "--kill-after", "2s", "E", "--", "sh", "-c",
       "echo started; sleep 2.5; exit 3"},
      {"--lease", "2s", "E", "--", "sh", "-c", "echo started; sleep 0.5; exit 3"},
  };
  for (const auto& args : cases) {
    CAPTURE(args[1]);
    RedisServer redis;
    std::vector<std::string> argv = {"exec"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto job = spawn_rlock(redis, argv);
    REQUIRE(job.read_line(deadline(10s)) == std::optional<std::string>("started"));
    redis.freeze();
    auto status = job.wait(deadline(20s));
    redis.thaw();
    INFO("stderr: " << job.err());
    CHECK(status.value_or(kStillRunning) == 3);
    CHECK(job.err().find("could not release the lock") != std::string::npos);
    CHECK(job.err().find("lock lost") == std::string::npos);
  }
}

// The job ends at once; the release waits for a frozen server that thaws only after the
// lease ran out, and finds the lock gone: expired, or taken away before the command ended
// (nothing tells which), so 76, and the line says which of those is known.
TEST_CASE("exec: a release answered after the lease ran out says it cannot tell when it went") {
  RedisServer redis;
  auto job = spawn_rlock(redis, {"--timeout", "8s", "exec", "--lease", "3s", "E", "--", "sh", "-c",
                                 "echo started; sleep 0.3; exit 3"});
  REQUIRE(job.read_line(deadline(10s)) == std::optional<std::string>("started"));
  redis.freeze();                   // before the job ends, within its lease
  std::this_thread::sleep_for(4s);  // the fault: frozen past the lease (3 s), within --timeout
  redis.thaw();
  auto status = job.wait(deadline(20s));
  INFO("stderr: " << job.err());
  CHECK(status.value_or(kStillRunning) == 76);
  CHECK(line_count(job.err()) == 1);
  CHECK(job.err().find("lock lost or expired: the release was answered only after the lease had "
                       "run out") != std::string::npos);
  CHECK(job.err().find("lost before the command ended") == std::string::npos);
}

TEST_CASE("exec: a lost lock sends --on-lost, then KILL after --kill-after") {
  RedisServer redis;
  // The job traps USR1 (prints a line and keeps running), so only the KILL that follows
  // after --kill-after ends it.
  // (--lease 3s: a 1s --kill-after must fit, see the "does not fit" test.)
  auto job = spawn_rlock(redis, {"exec", "--lease", "3s", "--on-lost", "USR1", "--kill-after", "1s",
                                 "O", "--", "sh", "-c",
                                 "trap 'echo got-usr1' USR1; echo $$; "
                                 "while :; do sleep 0.1; done"});
  PidGuard child(read_pid(job));
  redis.cmd({"DEL", lock_key("O")});
  auto line = job.read_line(deadline(5s));
  CHECK(line == std::optional<std::string>("got-usr1"));
  const auto signalled_at = Clock::now();
  CHECK(child.wait_gone(5s));
  CHECK(ms_between(signalled_at) >= 500);
  auto status = job.wait(deadline(5s));
  REQUIRE(status.has_value());
  CHECK(*status == 76);
}

TEST_CASE("exec: TERM to rlock reaches the job's child and grandchild") {
  RedisServer redis;
  auto job = spawn_rlock(redis, {"exec", "--owner", "job", "K", "--", "sh", "-c",
                                 "sleep 60 & echo $!; echo $$; wait"});
  PidGuard grandchild(read_pid(job));
  PidGuard child(read_pid(job));

  job.kill(SIGTERM);
  auto status = job.wait(deadline(10s));
  INFO("stderr: " << job.err());
  REQUIRE(status.has_value());
  CHECK(*status == 128 + SIGTERM);
  CHECK(redis.cmd_int({"EXISTS", lock_key("K")}) == 0);
  CHECK(child.wait_gone(5s));
  CHECK(grandchild.wait_gone(5s));
}

// In a container whose PID 1 does not reap orphans (or where rlock is PID 1), a job's dead
// orphans stay zombies: they are no running processes and must not keep rlock waiting.
TEST_CASE("exec: rlock does not wait for dead orphans that nobody reaps") {
  RedisServer redis;
  struct Case {
    const char* lock;
    const char* script;  // prints the pid of a background child, then its own
    bool term_rlock;
    int status;
  };
  const Case cases[] = {
      {"term-rlock", "sleep 60 & echo $!; echo $$; wait", true, 128 + SIGTERM},
      {"job-exits-leaving-a-child", "sleep 60 & echo $!; echo $$; exit 3", false, 3},
  };
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.lock));
    auto job = spawn_under_lazy_reaper(
        rlock_argv(redis, {"exec", "--owner", "job", c.lock, "--", "sh", "-c", c.script}));
    PidGuard grandchild(read_pid(job));
    const pid_t child = read_pid(job);
    if (c.term_rlock) {
      const pid_t rlock_pid = parent_of(child);
      REQUIRE(rlock_pid > 0);
      ::kill(rlock_pid, SIGTERM);
    }
    auto status = job.wait(deadline(5s));
    INFO("stderr: " << job.err());
    CHECK(status.value_or(kStillRunning) == c.status);
    CHECK(grandchild.wait_gone(1s));
    CHECK(redis.cmd_int({"EXISTS", lock_key(c.lock)}) == 0);
  }
}

TEST_CASE("exec: a signal while waiting stops the wait; the command never runs") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir / "marker";
  REQUIRE(rlock(redis, {"lock", "M", "--owner", "holder", "--lease", "60s"}).status == 0);

  auto waiter = spawn_rlock(redis, {"exec", "--wait", "30s", "M", "--", "touch", marker});
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel("M")) == 1; }, 10s));

  waiter.kill(SIGTERM);
  const auto signalled_at = Clock::now();
  auto status = waiter.wait(deadline(10s));
  REQUIRE(status.has_value());
  CHECK(*status == 128 + SIGTERM);
  CHECK(ms_between(signalled_at, waiter.exit_time()) < 2000);
  CHECK_FALSE(std::filesystem::exists(marker));
  CHECK(hash_of(redis, lock_key("M")) == json::object({{"holder", "1"}}));
}

TEST_CASE("exec: --min-hold keeps the lock after a quick job, then it expires by itself") {
  RedisServer redis;
  const auto start = Clock::now();
  auto r = rlock(redis, {"exec", "--min-hold", "3s", "--owner", "job", "H", "--", "true"});
  CHECK(r.status == 0);
  CHECK(r.elapsed < 2s);

  r = rlock(redis, {"exec", "--owner", "other", "H", "--", "true"});
  CHECK(r.status == 75);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  long long pttl = redis.cmd_int({"PTTL", lock_key("H")});
  CHECK(pttl > 0);
  CHECK(pttl <= 3000);

  r = rlock(redis, {"lock", "--wait", "10s", "H", "--owner", "later"});
  CHECK(r.status == 0);
  CHECK(ms_between(start) >= 2900);
  CHECK(ms_between(start) < 6000);
}

TEST_CASE("exec: busy without --wait exits 75 (or -E) with one notice and stdout untouched") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir / "marker";
  REQUIRE(rlock(redis, {"lock", "B", "--owner", "holder"}).status == 0);
  auto r = rlock(redis, {"exec", "B", "--", "touch", marker});
  CHECK(r.status == 75);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  r = rlock(redis, {"exec", "-E", "0", "B", "--", "touch", marker});
  CHECK(r.status == 0);
  r = rlock(redis, {"-q", "exec", "-n", "B", "--", "touch", marker});
  CHECK(r.status == 75);
  CHECK(r.err.empty());
  CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("exec: exit statuses are the child's") {
  RedisServer redis;
  TempDir dir;
  const std::string not_executable = dir / "not-executable";
  write_file(not_executable, "#!/bin/sh\nexit 0\n", 0644);

  struct Case {
    const char* what;
    std::vector<std::string> command;
    int status;
  };
  const Case cases[] = {
      {"success", {"true"}, 0},
      {"exit code", {"sh", "-c", "exit 7"}, 7},
      {"killed by a signal", {"sh", "-c", "kill -9 $$"}, 128 + SIGKILL},
      {"command not found", {"rlock-test-no-such-command"}, 127},
      {"not executable", {not_executable}, 126},
  };
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.what));
    std::vector<std::string> args{"exec", "E", "--"};
    args.insert(args.end(), c.command.begin(), c.command.end());
    auto r = rlock(redis, args);
    INFO("stderr: " << r.err);
    CHECK(r.status == c.status);
    CHECK(redis.cmd_int({"EXISTS", lock_key("E")}) == 0);
  }
}

TEST_CASE("exec: the child gets exact argv, the RLOCK_* environment and no extra descriptors") {
  RedisServer redis;

  auto r = rlock(redis, {"exec", "--owner", "env-owner", "--lease", "7s", "V", "--", "sh", "-c",
                         R"(printf '%s|%s|%s|%s' "$RLOCK_NAME" "$RLOCK_OWNER" "$RLOCK_FENCE" )"
                         R"("$RLOCK_LEASE_MS")"});
  REQUIRE(r.status == 0);
  CHECK(r.out == "V|env-owner|" + redis.cmd_str({"GET", fence_key("V")}) + "|7000");

  // No shell in between: arguments arrive verbatim.
  r = rlock(redis, {"exec", "V", "--", "printf", "%s|", "a b", "$HOME", "*", ""});
  REQUIRE(r.status == 0);
  CHECK(r.out == "a b|$HOME|*||");

  // ls lists its own descriptors: 0-2 and the one reading the directory; no Redis socket,
  // no guardian pipe.
  r = rlock(redis, {"exec", "V", "--", "ls", "/proc/self/fd"});
  REQUIRE(r.status == 0);
  CHECK(r.out == "0\n1\n2\n3\n");
}

}  // namespace
}  // namespace rlock::test
