#include "failover_jobs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

namespace rlock::test {

Spawned spawn_on(const std::string& url, std::vector<std::string> args) {
  std::vector<std::string> argv = {rlock_binary(), "--url", url};
  if (std::getenv("RLOCK_FAILOVER_VERBOSE")) argv.push_back("-v");
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

RunResult on(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {"--url", url});
  return rlock_raw(args);
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `exec` args of a job named `who` that stamps its start and end into `log` around `body`
// (a shell command); TERM ends it with an end stamp.
std::vector<std::string> stamped(std::vector<std::string> exec_args, const std::string& log,
                                 const std::string& who, const std::string& body) {
  const std::string stamp = "echo \"$1 $RLOCK_FENCE $(date +%s%N) $2\" >> \"$0\"";
  std::string script = "trap 'set -- end \"$2\"; " + stamp + "; exit 143' TERM; set -- start \"" +
                       who + "\"; " + stamp + "; " + body + "; set -- end \"" + who + "\"; " +
                       stamp;
  // $0 is the log, $2 the job's name (set again before each stamp).
  exec_args.insert(exec_args.end(), {"--", "sh", "-c", script, log, "x", who});
  return exec_args;
}

// The jobs of `log` in start order.
std::vector<Job> jobs_of(const std::string& log) {
  std::map<long long, Job> by_fence;
  if (!std::filesystem::exists(log)) return {};
  std::istringstream in(read_file(log));
  std::string line;
  while (std::getline(in, line)) {
    // A stamp whose `date` a second TERM to the job's group cut short has no time; the
    // trap then stamps again.
    std::istringstream fields(line);
    std::string what, who;
    long long fence = 0, ns = 0;
    if (!(fields >> what >> fence >> ns >> who)) continue;
    Job& j = by_fence[fence];
    j.who = who;
    j.fence = fence;
    long long& at = what == "start" ? j.start_ns : j.end_ns;
    at = std::max(at, ns);
  }
  std::vector<Job> out;
  for (auto& [f, j] : by_fence) out.push_back(j);
  std::sort(out.begin(), out.end(),
            [](const Job& a, const Job& b) { return a.start_ns < b.start_ns; });
  return out;
}

const Job* job_named(const std::vector<Job>& jobs, const std::string& who) {
  for (const Job& j : jobs) {
    if (j.who == who) return &j;
  }
  return nullptr;
}

bool started(const std::string& log, const std::string& who) {
  return job_named(jobs_of(log), who) != nullptr;
}

// Every job ended, none started before the one before it ended, and the fences rise in
// start order: what "never both running" and "fences never go backwards" mean.
void check_serial(const std::string& log) {
  std::vector<Job> jobs = jobs_of(log);
  std::string bad;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    if (j.end_ns == 0) bad += j.who + " has no end; ";
    if (i == 0) continue;
    const Job& prev = jobs[i - 1];
    if (prev.end_ns > j.start_ns)
      bad += j.who + " started " + std::to_string((prev.end_ns - j.start_ns) / 1000000) +
             " ms before " + prev.who + " ended; ";
    if (j.fence <= prev.fence) bad += j.who + "'s fence is not above " + prev.who + "'s; ";
  }
  INFO("log:\n" << read_file(log));
  CHECK(bad == "");
}

long long max_fence(const std::string& log) {
  long long m = 0;
  for (const Job& j : jobs_of(log)) m = std::max(m, j.fence);
  return m;
}

long long fence_on(const RedisServer& server, const std::string& name) {
  std::string v = server.cmd_str({"GET", fence_key(name)});
  return v.empty() ? 0 : std::stoll(v);
}

void touch(const std::string& path) { write_file(path, ""); }

// Waiters in the queue of lock `name` on `server`.
long long queued(const RedisServer& server, const std::string& name) {
  return server.cmd_int({"ZCARD", lock_key(name) + ":waiters"});
}

// Why a round's processes ended as they did, for failure messages.
std::string report(Spawned& p, const std::string& who) {
  return who + ": " + std::to_string(p.wait(Clock::now()).value_or(kStillRunning)) + " " + p.err();
}

// SENTINEL FAILOVER to `next` without SentinelSetup::failover's settle() first (which would
// attach a detached replica again); returns once the sentinels all name `next` and its ROLE
// says master.
void failover_to(SentinelSetup& sentinel, RedisServer& next) {
  REQUIRE(poll_until(
      [&] {
        try {
          sentinel.sentinel(0).cmd({"SENTINEL", "FAILOVER", sentinel.master_name()});
          return true;
        } catch (const RedisError& e) {
          return std::string(e.what()).find("INPROG") != std::string::npos;
        }
      },
      20s, 50ms));
  REQUIRE(poll_until(
      [&] {
        try {
          return &sentinel.current_master(0ms) == &next;
        } catch (const std::runtime_error&) {
          return false;
        }
      },
      20s, 20ms));
}

}  // namespace rlock::test
