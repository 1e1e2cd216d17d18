// Child processes of a test: Spawned (captured output), run, the rlock runners, the lazy
// reaper, and watching processes that are not our children.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redis_server.hpp"
#include "test_files.hpp"
#include "timing.hpp"

namespace rlock::test {

using Env = std::vector<std::pair<std::string, std::string>>;

// Exit status as a shell reports it: the exit code, or 128+N if killed by signal N.
int decode_wait_status(int wait_status);

// What tests compare a status with when Spawned::wait() returned nullopt:
// `proc.wait(deadline(5s)).value_or(kStillRunning) == 0` reads well in failure output.
constexpr int kStillRunning = -1;

// A child process started with posix_spawnp: stdin from /dev/null, stdout and stderr on
// pipes read by this object, no descriptor inherited beyond 0-2, default signal
// dispositions and an empty signal mask, and the test environment (see child_env) plus
// env_extra. The destructor SIGKILLs (by pid) and reaps it if it still runs. Move-only.
class Spawned {
 public:
  explicit Spawned(const std::vector<std::string>& argv, const Env& env_extra = {});
  ~Spawned();
  Spawned(Spawned&&) noexcept;
  Spawned& operator=(Spawned&&) noexcept;

  pid_t pid() const;
  // Next complete stdout line without its '\n'; the unterminated rest once stdout is
  // closed; nullopt at the deadline or when nothing is left.
  std::optional<std::string> read_line(Clock::time_point deadline);
  // Same for stderr.
  std::optional<std::string> read_err_line(Clock::time_point deadline);
  // Waits for the process to exit and returns its status (see decode_wait_status), or
  // nullopt if it still runs at the deadline. Output is collected while waiting.
  std::optional<int> wait(Clock::time_point deadline);
  // True while the process has not exited (checks without blocking).
  bool running();
  // Sends `sig` to the process (by pid) unless it has already been reaped.
  void kill(int sig);
  // Everything read from stdout / stderr so far (all of it after wait()).
  const std::string& out() const;
  const std::string& err() const;
  // When the exit was observed (meaningful after wait() returned a status).
  Clock::time_point exit_time() const;

  // Waits until every process in `procs` has exited or the deadline passes, watching all
  // at once so that each exit_time() is accurate; true if all exited.
  static bool wait_all(std::initializer_list<Spawned*> procs, Clock::time_point deadline);

 private:
  struct State;
  static bool pump(const std::vector<State*>& procs, Clock::time_point deadline,
                   const std::function<bool()>& done);
  std::optional<std::string> take_line(bool from_stdout, Clock::time_point deadline);
  std::unique_ptr<State> s_;
};

struct RunResult {
  int status = -1;  // see decode_wait_status
  std::string out;
  std::string err;
  std::chrono::milliseconds elapsed{};
};

// Runs argv to completion (as Spawned) and returns its status and output. Past `timeout`
// the process is SIGKILLed and the test FAILs.
RunResult run(const std::vector<std::string>& argv, const Env& env_extra = {},
              std::chrono::milliseconds timeout = 30s);

// The environment children get: this process's, minus RLOCK_*, REDIS_URL and
// XDG_CONFIG_HOME, with HOME set to an empty directory of the suite (so no user config
// file leaks in), plus `extra` (which replaces variables of the same name).
std::vector<std::string> child_env(const Env& extra);

// Path of the rlock binary under test: $RLOCK_TEST_BINARY when set and not empty (e.g.
// the installed package's /usr/bin/rlock, scripts/package-test.sh), else the build's.
std::string rlock_binary();
// {rlock, --url, server.url(), args...}
std::vector<std::string> rlock_argv(const RedisServer& server,
                                    const std::vector<std::string>& args);
// Runs `rlock --url <server> args...`.
RunResult rlock(const RedisServer& server, const std::vector<std::string>& args,
                const Env& env_extra = {}, std::chrono::milliseconds timeout = 30s);
// Runs `rlock args...` without --url.
RunResult rlock_raw(const std::vector<std::string>& args, const Env& env_extra = {},
                    std::chrono::milliseconds timeout = 30s);
// Starts `rlock --url <server> args...` in the background.
Spawned spawn_rlock(const RedisServer& server, const std::vector<std::string>& args,
                    const Env& env_extra = {});

// Starts argv (as Spawned) under a helper process that is a child subreaper and never reaps
// the orphans it inherits, only argv's own process, whose status it exits with. Orphaned
// descendants that die stay zombies until the helper exits: the situation of a job in a
// container whose PID 1 does not reap (or is rlock itself). argv's process gets SIGKILL
// when the helper dies (PR_SET_PDEATHSIG), so a failing test leaves nothing behind.
Spawned spawn_under_lazy_reaper(const std::vector<std::string>& argv, const Env& env_extra = {});

// Parent pid of `pid` (from /proc/PID/stat); -1 if it is gone.
pid_t parent_of(pid_t pid);

// Waits (an event: pidfd + poll) until process `pid`, which need not be our child, has
// exited; true if it is gone within `timeout`.
bool wait_gone(pid_t pid, std::chrono::milliseconds timeout);

// Watches a process that is not our child (a job's grandchild, say) through a pidfd taken
// as soon as its pid is known, so a recycled pid can never be hit. The destructor SIGKILLs
// it if it is still alive, so a failing test leaves nothing behind. Move-only.
class PidGuard {
 public:
  explicit PidGuard(pid_t pid);
  ~PidGuard();
  PidGuard(PidGuard&&) noexcept = default;
  PidGuard& operator=(PidGuard&&) noexcept = default;

  pid_t pid() const { return pid_; }
  // True once the process has exited (within `timeout`).
  bool wait_gone(std::chrono::milliseconds timeout);

 private:
  pid_t pid_;
  Fd pidfd_;
};

}  // namespace rlock::test
