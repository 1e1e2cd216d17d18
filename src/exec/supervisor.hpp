#pragma once

#include <functional>
#include <string>

#include "exec/cgroup.hpp"
#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "exec/spawn.hpp"
#include "exec/watchdog.hpp"
#include "util/clock.hpp"

namespace rlock::exec {

struct SuperviseOptions {
  int on_lost_signal = SIGTERM;  // sent to the job when it must stop (lock lost or lease ending)
  Millis kill_after{10'000};     // then SIGKILL after this long
  Millis margin{0};    // the job is dead this long before the lease deadline (stop_margin)
  Millis min_hold{0};  // keep the lock until this long after acquisition
  Deadline acquired_at{};
  const JobCgroup* cgroup = nullptr;                // the job's cgroup, if one could be created
  std::function<void(const std::string&)> verbose;  // -v explanations
  std::function<void(const std::string&)> warn;     // notices unless -q
  std::function<void()> started;                    // the job is running (its exec succeeded)
  std::function<void(int)> forwarded;               // a stop signal was passed on to the job
  // Asked when the hold came too late to start the job and no renewal confirmed it: true
  // if the caller will give it back and wait again (then no notice is printed).
  std::function<bool()> wait_again;
};

// Runs the job while `watchdog` keeps its lock, forwards INT/TERM/HUP/QUIT to the job's
// process group, applies the lost-lock policy, waits until the whole job is gone, then
// releases. Returns rlock's exit code: the job's status, 128+N for signal N, or
// kExitLockLost (also without starting the job when its lease ends too soon to stop it in
// time: at or after watchdog.stop_at()). Throws Error (126/127) when the command cannot be
// executed. `guardian` must have been started before; supervise() tells it the lease
// deadlines and when the job is over.
//
// Stopping: when no renewal was confirmed by lease deadline - kill_after - margin (or a
// renewal says the lock is gone), the job gets on_lost_signal and CONT, and SIGKILL at
// min(then + kill_after, lease deadline - margin).
//
// Job control: when the job, holding the terminal, is stopped by SIGTSTP/SIGTTIN/SIGTTOU,
// rlock takes the terminal back and stops itself, so the shell sees its job stopped; when
// continued, it hands the terminal back (if rlock is in the foreground) and continues the
// job. Nothing renews the lease meanwhile: past the stop point the guardian stops the job,
// and rlock, once continued, reports the lost lock.
int supervise(const JobSpec& spec, Watchdog& watchdog, SignalFd& signals, Guardian& guardian,
              const SuperviseOptions& options);

}  // namespace rlock::exec
