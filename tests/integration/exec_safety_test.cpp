// exec's central promise, under pauses and failures: the job is dead before anyone else can
// hold its lock. A frozen rlock, Redis refusing writes, a SIGKILLed rlock with a job that
// escaped its process group, a job that would start too late, inherited children, --kill-after
// that does not fit the lease, and job control through a terminal.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.hpp"

namespace rlock::test {
namespace {

// A job that ignores TERM (the disposition survives exec), prints its pid and sleeps:
// only a KILL ends it.
const std::vector<std::string> kStubbornJob = {"sh", "-c", "trap '' TERM; echo $$; exec sleep 60"};

pid_t read_pid(Spawned& proc) {
  auto line = proc.read_line(deadline(10s));
  INFO("stdout: " << proc.out() << "\nstderr: " << proc.err());
  REQUIRE(line.has_value());
  return static_cast<pid_t>(std::stol(*line));
}

std::vector<std::string> exec_args(std::vector<std::string> args,
                                   const std::vector<std::string>& command) {
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

// The job's cgroup directory (from /proc/PID/cgroup and the cgroup2 mount), or "" when the
// job does not run in a cgroup of rlock's.
std::string job_cgroup_dir(pid_t job) {
  std::string line;
  std::ifstream in("/proc/" + std::to_string(job) + "/cgroup");
  std::string path;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.find("/rlock.") == std::string::npos) return "";
  for (const char* mount : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (std::filesystem::exists(std::string(mount) + path + "/cgroup.procs")) return mount + path;
  }
  return "";
}

TEST_CASE(
    "exec: with Redis refusing writes, a job that ignores TERM is dead before the next owner gets "
    "the lock") {
  RedisServer redis;
  auto job = spawn_rlock(
      redis, exec_args({"exec", "--lease", "2s", "--kill-after", "1s", "--owner", "job", "P"},
                       kStubbornJob));
  PidGuard child(read_pid(job));
  // Writes (renewals, acquisitions) wait out the pause, and nothing expires meanwhile;
  // the lease, renewed at most 2s before the pause began, has run out when it ends.
  redis.cmd({"CLIENT", "PAUSE", "2500", "WRITE"});
  auto other = spawn_rlock(redis, {"lock", "--wait", "10s", "--owner", "other", "P"});
  auto status = other.wait(deadline(15s));
  INFO("job stderr: " << job.err() << "\nother stderr: " << other.err());
  REQUIRE(status == std::optional<int>(0));
  CHECK(parse_json(other.out())["owner"] == "other");
  CHECK(child.wait_gone(0ms));  // already gone when the other owner got the lock
  CHECK(job.wait(deadline(10s)) == std::optional<int>(76));
}

TEST_CASE("exec: a SIGSTOPped rlock's job is killed by the guardian before the lease ends") {
  RedisServer redis;
  auto job = spawn_rlock(
      redis, exec_args({"exec", "--lease", "2s", "--kill-after", "1s", "--owner", "job", "F"},
                       kStubbornJob));
  PidGuard child(read_pid(job));
  job.kill(SIGSTOP);
  auto other = spawn_rlock(redis, {"lock", "--wait", "10s", "--owner", "other", "F"});
  auto status = other.wait(deadline(15s));
  INFO("other stderr: " << other.err());
  REQUIRE(status == std::optional<int>(0));
  CHECK(child.wait_gone(0ms));  // the guardian killed it before the lease could expire

  // Continued, rlock finds it missed its stop point: the lock counts as lost.
  job.kill(SIGCONT);
  CHECK(job.wait(deadline(10s)) == std::optional<int>(76));
  INFO("job stderr: " << job.err());
  CHECK(job.err().find("lock lost") != std::string::npos);
  CHECK(hash_of(redis, lock_key("F")) == json::object({{"other", "1"}}));
}

TEST_CASE("exec: a setsid escapee of a SIGKILLed rlock's job is killed through the job's cgroup") {
  RedisServer redis;
  auto job = spawn_rlock(redis, {"exec", "--lease", "2s", "--kill-after", "1s", "X", "--", "sh",
                                 "-c", "setsid sh -c 'echo $$; exec sleep 300' & wait"});
  PidGuard escapee(read_pid(job));
  const std::string cgroup = job_cgroup_dir(escapee.pid());
  if (cgroup.empty()) {
    MESSAGE(
        "no cgroup for the job on this system: the process-group fallback cannot reach escapees");
    return;
  }
  job.kill(SIGKILL);
  CHECK(job.wait(deadline(5s)) == std::optional<int>(128 + SIGKILL));
  CHECK(escapee.wait_gone(3s));
  // The guardian removes the emptied cgroup (no event announces an rmdir).
  CHECK(poll_until([&] { return !std::filesystem::exists(cgroup); }, 5s));
}

TEST_CASE("exec: a child rlock inherited is left alone, and rlock does not wait for it") {
  struct Case {
    const char* what;
    Env env;
  };
  const Case cases[] = {{"cgroup", {}},
                        {"process group (RLOCK_CGROUP=off)", {{"RLOCK_CGROUP", "off"}}}};
  RedisServer redis;
  for (const auto& c : cases) {
    INFO("case: " << c.what);
    // The background sleep ignores TERM: before, rlock TERMed it and then waited
    // --kill-after (5s) to KILL it.
    const std::string script =
        "trap '' TERM; sleep 300 & echo $!; exec \"$0\" --url \"$1\" exec --kill-after 5s I -- "
        "true";
    Spawned proc({"sh", "-c", script, rlock_binary(), redis.url()}, c.env);
    PidGuard inherited(read_pid(proc));
    const auto start = Clock::now();
    auto status = proc.wait(deadline(15s));
    INFO("stderr: " << proc.err());
    CHECK(status == std::optional<int>(0));
    CHECK(ms_between(start, proc.exit_time()) < 3000);
    CHECK_FALSE(inherited.wait_gone(0ms));  // still running
  }
}

TEST_CASE(
    "exec: an explicit --kill-after that does not fit the lease is refused; the default is "
    "shortened") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir / "marker";
  auto r =
      rlock(redis, {"exec", "--lease", "2s", "--kill-after", "8s", "K", "--", "touch", marker});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("--kill-after 8.0s") != std::string::npos);
  CHECK(r.err.find("--lease 2.0s") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(marker));
  CHECK(redis.cmd_int({"EXISTS", lock_key("K")}) == 0);

  r = rlock(redis, {"-v", "exec", "--lease", "3s", "K", "--", "touch", marker});
  CHECK(r.status == 0);
  CHECK(r.err.find("--kill-after defaults to 10.0s; using 1.7s to fit the 3.0s lease") !=
        std::string::npos);
  CHECK(std::filesystem::exists(marker));
}

TEST_CASE(
    "exec: a waiter paused across its grant never runs its job while another owner holds the "
    "lock") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir / "marker";
  REQUIRE(rlock(redis, {"lock", "W", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto waiter = spawn_rlock(redis, {"exec", "--wait", "30s", "--lease", "1s", "--owner", "waiter",
                                    "W", "--", "sh", "-c", "echo $RLOCK_FENCE > " + marker});
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel("W")) == 1; }, 10s));
  waiter.kill(SIGSTOP);
  REQUIRE(rlock(redis, {"unlock", "W", "--owner", "holder"}).status == 0);
  // The release reserved the lock for the stopped waiter; it did not claim it in time, so
  // another owner takes it, and the resumed waiter queues again instead of running.
  auto other = rlock(redis, {"lock", "--wait", "10s", "W", "--owner", "other", "--lease", "60s"});
  REQUIRE(other.status == 0);
  const auto other_fence = parse_json(other.out).at("fence").get<long long>();
  waiter.kill(SIGCONT);
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("W") + ":waiters"}) == 1;
      },
      10s));
  CHECK_FALSE(std::filesystem::exists(marker));
  CHECK(hash_of(redis, lock_key("W")) == json::object({{"other", "1"}}));
  // Only once the other owner is done does the waiter's job run, with a newer token.
  REQUIRE(rlock(redis, {"unlock", "W", "--owner", "other"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(std::stoll(read_file(marker)) > other_fence);
}

TEST_CASE("exec: ^Z stops the job and returns the terminal to the shell; fg resumes it") {
  RedisServer redis;
  PtyProcess shell(
      {"bash", "--norc", "--noprofile", "-i"},
      {{"PS1", "PROMPT> "}, {"RL", rlock_binary()}, {"URL", redis.url()}, {"TERM", "dumb"}});
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  shell.send(
      "\"$RL\" --url \"$URL\" exec --owner tty J -- sh -c 'printf \"job-%s\\n\" started; read x; "
      "echo "
      "\"got-$x\"; exit 7'\n");
  INFO("terminal: " << shell.output());
  // (The terminal echoes the command line first: the marker must not be in it.)
  REQUIRE(shell.expect("job-started", deadline(10s)));
  shell.send("\x1a");  // ^Z
  REQUIRE(shell.expect("Stopped", deadline(10s)));
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  shell.send("jobs\n");
  CHECK(shell.expect("Stopped", deadline(10s)));
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  CHECK(hash_of(redis, lock_key("J")) == json::object({{"tty", "1"}}));  // held while stopped

  shell.send("fg\n");
  REQUIRE(shell.expect("exec --owner tty J", deadline(10s)));  // fg echoes the job
  shell.send("hello\n");
  CHECK(shell.expect("got-hello", deadline(10s)));
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  shell.send("echo rc=$?\n");
  CHECK(shell.expect("rc=7", deadline(10s)));
  CHECK(redis.cmd_int({"EXISTS", lock_key("J")}) == 0);
  shell.send("exit\n");
  CHECK(shell.wait(deadline(10s)).has_value());
}

}  // namespace
}  // namespace rlock::test

namespace rlock::test {
namespace {

TEST_CASE("exec: a job reading the terminal from the background stops with rlock; fg resumes it") {
  RedisServer redis;
  PtyProcess shell(
      {"bash", "--norc", "--noprofile", "-i"},
      {{"PS1", "PROMPT> "}, {"RL", rlock_binary()}, {"URL", redis.url()}, {"TERM", "dumb"}});
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  shell.send("set -b\n");  // report the job's stop as soon as it happens
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  shell.send(
      "\"$RL\" --url \"$URL\" exec --owner bg B -- sh -c 'read x; echo \"got-$x\"; exit 5' &\n");
  INFO("terminal: " << shell.output());
  REQUIRE(shell.expect("Stopped", deadline(10s)));  // SIGTTIN stopped the job, and so rlock
  CHECK(hash_of(redis, lock_key("B")) == json::object({{"bg", "1"}}));

  shell.send("fg\n");
  REQUIRE(shell.expect("exec --owner bg B", deadline(10s)));
  shell.send("hello\n");
  CHECK(shell.expect("got-hello", deadline(10s)));
  REQUIRE(shell.expect("PROMPT> ", deadline(10s)));
  shell.send("echo rc=$?\n");
  CHECK(shell.expect("rc=5", deadline(10s)));
  shell.send("exit\n");
  CHECK(shell.wait(deadline(10s)).has_value());
}

}  // namespace
}  // namespace rlock::test
