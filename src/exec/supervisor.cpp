#include "exec/supervisor.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <optional>

#include "exec/guardian.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

constexpr Millis kGroupPollInterval{20};

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The supervision state: the job's leader, the rest of its group, the lease.
class Run {
 public:
  Run(const Job& job, Watchdog& watchdog, SignalFd& signals, const SuperviseOptions& o)
      : job_(job), watchdog_(watchdog), signals_(signals), o_(o) {}

  // Loops until the leader has exited and no process of its group is left.
  void loop() {
    while (leader_alive() || group_alive(job_.pid)) {
      if (!leader_alive() && !draining_) start_draining();
      wait_for_event();
      handle_signals();
      if (!leader_alive()) reap_children();
      if (SteadyClock::now() >= kill_at_) {
        kill(-job_.pid, SIGKILL);
        kill_at_ = Deadline::max();
      }
      if (!lost_) renew();
    }
  }

  bool lost() const { return lost_; }
  int status() const { return status_.value_or(0); }

 private:
  bool leader_alive() const { return !status_; }

  void wait_for_event() {
    Deadline wake = lost_ ? kill_at_ : std::min(kill_at_, watchdog_.next_due());
    if (!leader_alive()) wake = std::min(wake, SteadyClock::now() + kGroupPollInterval);
    pollfd p{signals_.fd(), POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<long long>(millis_until(wake).count(), 1 << 30)));
  }

  void handle_signals() {
    while (auto s = signals_.next()) {
      if (*s == SIGCHLD) {
        reap_children();
      } else if (is_forwarded(*s)) {
        if (o_.verbose) o_.verbose("forwarding signal " + std::to_string(*s) + " to the job's process group");
        kill(-job_.pid, *s);
      }
    }
  }

  // rlock is the job's subreaper: orphans of the job are reparented to it, and reaping
  // them here keeps zombies from looking like live members of the group.
  void reap_children() {
    int st = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      if (pid == job_.pid) status_ = st;
    }
  }

  void renew() {
    switch (watchdog_.tick()) {
      case Watchdog::State::kHeld:
        return;
      case Watchdog::State::kUnreachable:
        if (o_.verbose) o_.verbose("lease renewal failed, retrying: " + watchdog_.lost_reason());
        return;
      case Watchdog::State::kLost:
        lost_ = true;
        if (o_.warn) o_.warn("lock lost: " + watchdog_.lost_reason() + "; stopping the job");
        signal_group(o_.on_lost_signal);
        kill_at_ = SteadyClock::now() + o_.kill_after;
        return;
    }
  }

  // The leader is gone but processes of its group remain: they must not run on after
  // the lock is released, so they get the stop signal and, after --kill-after, KILL.
  void start_draining() {
    draining_ = true;
    if (lost_) return;  // already signalled
    if (o_.verbose) o_.verbose("the command exited but left processes in its group; stopping them");
    signal_group(o_.on_lost_signal);
    kill_at_ = SteadyClock::now() + o_.kill_after;
  }

  void signal_group(int signo) {
    kill(-job_.pid, signo);
    if (signo != SIGKILL && signo != SIGCONT) kill(-job_.pid, SIGCONT);
  }

  const Job& job_;
  Watchdog& watchdog_;
  SignalFd& signals_;
  const SuperviseOptions& o_;
  std::optional<int> status_;
  bool lost_ = false;
  bool draining_ = false;
  Deadline kill_at_ = Deadline::max();
};

}  // namespace

int supervise(const JobSpec& spec, Watchdog& watchdog, SignalFd& signals, Guardian& guardian,
              const SuperviseOptions& options) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  Job job;
  try {
    job = start_job(spec, guardian.announce_fd());
  } catch (const Error&) {
    guardian.finish();
    watchdog.release(Millis(0), nullptr);
    throw;
  }
  Run run(job, watchdog, signals, options);
  run.loop();
  restore_terminal(job);

  // The whole group is gone. Release first: a waiter's handoff should not wait for the
  // guardian's bookkeeping.
  std::string why;
  bool released = true;
  if (!run.lost()) {
    auto held_for = std::chrono::duration_cast<Millis>(SteadyClock::now() - options.acquired_at);
    released = watchdog.release(std::max(options.min_hold - held_for, Millis(0)), &why);
  }
  guardian.finish();
  if (!released && options.warn) {
    options.warn("could not release the lock (" + why + "); it expires when its lease runs out");
  }
  return run.lost() ? kExitLockLost : exit_code_of(run.status());
}

}  // namespace rlock::exec
