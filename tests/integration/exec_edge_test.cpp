// exec in the corners: inherited dispositions, locks lost late, escaping processes,
// min-hold after a handover.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.hpp"

namespace t = rlock::test;
using namespace std::chrono_literals;

TEST_CASE("exec: with SIGCHLD ignored by the parent, rlock still sees the job end") {
  t::RedisServer server;
  auto argv = t::rlock_argv(server, {"exec", "ign", "--", "sh", "-c", "exit 3"});
  argv.insert(argv.begin(), {"perl", "-e", "$SIG{CHLD} = 'IGNORE'; exec @ARGV or die"});
  auto r = t::run(argv, {}, 20s);
  CHECK(r.status == 3);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{ign}"}) == 0);
}

TEST_CASE("exec: a lock lost after the last renewal still exits 76") {
  t::RedisServer server;
  t::TempDir dir;
  std::string fifo = dir / "go";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto job = t::spawn_rlock(
      server, {"exec", "late", "--", "sh", "-c", "echo ready; read x < \"$0\"", fifo});
  REQUIRE(job.read_line(t::deadline(10s)) == std::optional<std::string>("ready"));
  // Taken away unannounced (a forced unlock would tell the holder, which stops its job at
  // once: tests/integration/hold_watch_test.cpp), so only the release can find it gone.
  REQUIRE(server.cmd_int({"DEL", "rlock:lock:{late}", "rlock:lock:{late}:exec"}) >= 1);
  REQUIRE(t::rlock(server, {"lock", "late", "--owner", "other"}).status == 0);
  std::ofstream(fifo) << "go\n";
  CHECK(job.wait(t::deadline(10s)) == std::optional<int>(76));
  CHECK(job.err().find("lock lost") != std::string::npos);
  CHECK(t::hash_of(server, "rlock:lock:{late}") == t::json{{"other", "1"}});
}

TEST_CASE("exec: processes that left the job's group are stopped before the release") {
  t::RedisServer server;
  // Both containments: the job's cgroup, and process group + subreaper.
  for (const t::Env& env : {t::Env{}, t::Env{{"RLOCK_CGROUP", "off"}}}) {
    INFO("RLOCK_CGROUP=" << (env.empty() ? "" : env[0].second));
    // The escapee prints its pid; the job waits a moment so that it exists, then exits.
    auto job = t::spawn_rlock(server,
                              {"exec", "--kill-after", "2s", "esc", "--", "sh", "-c",
                               "setsid sh -c 'echo $$; exec sleep 60' & sleep 0.5"},
                              env);
    auto line = job.read_line(t::deadline(10s));
    REQUIRE(line.has_value());
    t::PidGuard escapee(std::stoi(*line));
    CHECK(job.wait(t::deadline(15s)) == std::optional<int>(0));
    CHECK(escapee.wait_gone(1s));
    CHECK(server.cmd_int({"EXISTS", "rlock:lock:{esc}"}) == 0);
  }
}

TEST_CASE("exec: --min-hold counts from the handover, not from when the wait began") {
  t::RedisServer server;
  REQUIRE(t::rlock(server, {"lock", "tick", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto waiter =
      t::spawn_rlock(server, {"exec", "--wait", "30s", "--min-hold", "5s", "tick", "--", "true"});
  REQUIRE(t::poll_until(
      [&] {
        return server.cmd_int({"ZCARD", "rlock:lock:{tick}:waiters"}) == 1;
      },
      10s));
  std::this_thread::sleep_for(1500ms);  // time spent waiting must not shorten the hold
  REQUIRE(t::rlock(server, {"unlock", "tick", "--owner", "holder"}).status == 0);
  REQUIRE(waiter.wait(t::deadline(10s)) == std::optional<int>(0));
  auto pttl = server.cmd_int({"PTTL", "rlock:lock:{tick}"});
  CHECK(pttl > 4'000);
  CHECK(pttl <= 5'000);
}

TEST_CASE("exec: a hold kept by --min-hold is busy for its own owner too") {
  t::RedisServer server;
  REQUIRE(t::rlock(server, {"exec", "--owner", "cron", "--min-hold", "30s", "once", "--", "true"})
              .status == 0);
  auto fence = server.cmd_str({"GET", "rlock:lock:{once}:fence"});
  CHECK(t::rlock(server, {"exec", "--owner", "cron", "once", "--", "true"}).status == 75);
  CHECK(t::rlock(server, {"lock", "once", "--owner", "cron"}).status == 75);
  CHECK(server.cmd_str({"GET", "rlock:lock:{once}:fence"}) == fence);
  CHECK(t::hash_of(server, "rlock:lock:{once}") == t::json{{"cron", "0"}});
}

TEST_CASE("exec: the job may run on every CPU rlock may, though it starts on rlock's own") {
  t::RedisServer server;
  const std::string allowed = "grep Cpus_allowed_list /proc/self/status";
  auto direct = t::run({"sh", "-c", allowed});
  REQUIRE(direct.status == 0);
  for (const t::Env& env : {t::Env{}, t::Env{{"RLOCK_CGROUP", "off"}}}) {
    INFO("RLOCK_CGROUP=" << (env.empty() ? "" : env[0].second));
    auto r = t::rlock(server, {"exec", "cpus", "--", "sh", "-c", allowed}, env);
    REQUIRE(r.status == 0);
    CHECK(r.out == direct.out);
    // Under a narrower affinity the job gets exactly that one.
    auto argv = t::rlock_argv(server, {"exec", "cpus", "--", "sh", "-c", allowed});
    argv.insert(argv.begin(), {"taskset", "-c", "0"});
    r = t::run(argv, env);
    REQUIRE(r.status == 0);
    CHECK(r.out == "Cpus_allowed_list:\t0\n");
  }
}

// rlock ignores SIGPIPE (a server closing the connection must not kill it silently); the
// command must not inherit that: `yes | head -1` in it would go on writing into errors.
TEST_CASE("exec: the command gets SIGPIPE at its default, though rlock ignores it") {
  t::RedisServer server;
  auto r = t::rlock(server, {"exec", "sp", "--", "grep", "^SigIgn:", "/proc/self/status"});
  REQUIRE(r.status == 0);
  REQUIRE(r.out.rfind("SigIgn:\t", 0) == 0);
  const unsigned long long ignored = std::stoull(r.out.substr(8), nullptr, 16);
  CHECK((ignored & (1ULL << (SIGPIPE - 1))) == 0);
}

// The guardian is started while the acquisition is with the server; when it cannot be
// (here: no process left under RLIMIT_NPROC), the job must not run and the lock goes back.
TEST_CASE("exec: a guardian that cannot start runs no job and gives the lock back") {
  if (geteuid() != 0) {
    MESSAGE("skipped: needs root to run rlock as another user with a process limit");
    return;
  }
  t::RedisServer server;
  // uid 65534 may not reach the build tree (a checkout in root's mode-700 home): it runs a
  // copy in a directory it can enter.
  t::TempDir dir;
  const auto copy = dir.path() / "rlock";
  std::filesystem::copy_file(t::rlock_binary(), copy);
  namespace fs = std::filesystem;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  auto argv = t::rlock_argv(server, {"exec", "np", "--", "echo", "ran"});
  argv.front() = copy.string();
  argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "prlimit", "--nproc=1"});
  auto r = t::run(argv);
  INFO("stderr: " << r.err);
  CHECK(r.status == 71);
  CHECK(r.out.empty());
  CHECK(t::line_count(r.err) == 1);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{np}"}) == 0);
  CHECK(server.cmd_int({"EXISTS", "rlock:lock:{np}:exec"}) == 0);
}
