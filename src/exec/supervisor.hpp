#pragma once

#include <functional>
#include <string>

#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "exec/spawn.hpp"
#include "exec/watchdog.hpp"
#include "util/clock.hpp"

namespace rlock::exec {

struct SuperviseOptions {
  int on_lost_signal = SIGTERM;  // sent to the job's group when the lock is lost
  Millis kill_after{10'000};     // then SIGKILL after this long
  Millis min_hold{0};            // keep the lock until this long after acquisition
  Deadline acquired_at{};
  std::function<void(const std::string&)> verbose;  // -v explanations
  std::function<void(const std::string&)> warn;     // notices unless -q
};

// Runs the job while `watchdog` keeps its lock, forwards INT/TERM/HUP/QUIT to the job's
// process group, applies the lost-lock policy, waits until the whole group is gone, then
// releases. Returns rlock's exit code: the job's status, 128+N for signal N, or
// kExitLockLost. Throws Error (126/127) when the command cannot be executed.
// `guardian` must have been started before; supervise() tells it when the job is over.
int supervise(const JobSpec& spec, Watchdog& watchdog, SignalFd& signals, Guardian& guardian,
              const SuperviseOptions& options);

}  // namespace rlock::exec
