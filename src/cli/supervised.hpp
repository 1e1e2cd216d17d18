#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/console.hpp"
#include "cli/stop_signals.hpp"
#include "exec/cgroup.hpp"
#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "exec/supervisor.hpp"
#include "prim/hold.hpp"
#include "prim/wait.hpp"
#include "redis/topology.hpp"
#include "util/duration.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace rlock::cli {

// The options of every subcommand that runs a command under a hold (exec, and the other
// primitives' command-running forms).
struct SuperviseFlags {
  std::string on_lost = "TERM";
  std::string kill_after;
  const CLI::Option* kill_after_given = nullptr;  // not given: the default, shortened to fit
  std::string min_hold = "0";
  bool keep_secrets = false;
};

// Declares --on-lost, --kill-after, --min-hold and --keep-secrets.
void add_supervise_flags(CLI::App& sub, SuperviseFlags& flags);

// The "lease" of a command run with nothing held (run_unheld): longer than any job.
inline constexpr Millis kNoLease = kMaxDuration;

// What a job runs under, as run_held() says it on -v and tells it to the job.
struct JobHold {
  std::string name;   // RLOCK_NAME
  std::string owner;  // RLOCK_OWNER
  // -v says "acquired <what> (<terms>lease L, renewed every R); running: CMD".
  std::string what;
  std::string terms;
  std::vector<std::pair<std::string, std::string>> env;  // the primitive's own variables
  std::string holds;                                     // RLOCK_HOLDS
};

// Running a command under a hold, in steps around the acquisition: the constructor does
// what must come before it (stop timing checked against the lease, signals diverted to a
// signal fd), prepare_during_next_script() has the job's cgroup and guardian made while the
// acquisition's first request is with the server (off the hand-off path, and in a round
// trip's time rather than before it), and run() starts and supervises the command once
// the hold is taken.
class Supervision {
 public:
  // Throws UsageError for bad flags (a --kill-after that does not fit `lease`, ...).
  Supervision(const SuperviseFlags& flags, Millis lease, const Console& console);

  // Makes the cgroup and starts the guardian while `topology`'s next script runs on the
  // server (run() does it if that never happened). A failure there comes out of run(),
  // after the hold is given back.
  void prepare_during_next_script(redis::Topology& topology);

  // Hooks for the acquisition's wait: only INT, TERM, HUP and QUIT end it.
  prim::WaitHooks wait_hooks(prim::WaitHooks base);
  // The stop signal that came while connecting or waiting, or that run() forwarded to the
  // command (0: none); drains the fd.
  int stop_signal();

  // Runs `command` (no shell) with `env` added, while `watchdog` keeps the hold. Returns
  // the exit code (the command's status, 128+N, or 76 when the hold was lost).
  int run(const std::vector<std::string>& command,
          std::vector<std::pair<std::string, std::string>> env, std::unique_ptr<prim::Hold> hold,
          redis::Topology& topology);

  // run() for a lock or permits: says on -v what is held and what runs, and gives the job
  // RLOCK_NAME, RLOCK_OWNER, `held.env`, RLOCK_LEASE_MS and RLOCK_HOLDS.
  int run_held(const std::vector<std::string>& command, const JobHold& held,
               std::unique_ptr<prim::Hold> hold, redis::Topology& topology);

  // Runs `command` as run() does, with nothing held (a rate limiter's allowed call): the
  // same signal forwarding, containment and guardian, and no lease that could be lost.
  // Construct the Supervision with kNoLease for it.
  int run_unheld(const std::vector<std::string>& command,
                 std::vector<std::pair<std::string, std::string>> env, redis::Topology& topology);

  Millis renew_interval() const;

  // Calls `attempt` (one wait for the hold and, once held, run() under it) and returns what
  // it returns; while `until` has not passed, a hold that came too late to start the command
  // and that no renewal confirmed is given back quietly by run() and `attempt` is called
  // again: a server that stalled with the acquisition costs a wait, not the run. After
  // `until`, run() says so and returns 76. Every form that runs a command under a hold
  // (exec, sem exec, delay-pop -- CMD) goes through here.
  template <typename Attempt>
  auto until_in_time(Deadline until, Attempt attempt) {
    wait_again_until_ = until;
    while (true) {
      came_too_late_ = false;  // an attempt that ends before run() (busy, a signal) is final
      auto outcome = attempt();
      if (!came_too_late_) return outcome;
    }
  }

 private:
  // The cgroup and the guardian, once; never throws (a failure is kept for run()).
  void prepare() noexcept;

  const Console& console_;
  std::vector<std::string> secret_names_;  // removed from the job's environment
  Millis lease_;
  exec::SuperviseOptions options_;
  StopSignals stops_;
  std::exception_ptr prepare_error_;
  std::optional<exec::JobCgroup> cgroup_;
  std::optional<exec::Guardian> guardian_;
  Deadline wait_again_until_{};
  bool came_too_late_ = false;
};

}  // namespace rlock::cli
