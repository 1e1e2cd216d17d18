#include "exec/supervisor.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "exec/guardian.hpp"
#include "exec/leftovers.hpp"
#include "exec/timer.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The supervision state: the job's leader, the rest of its group, the lease.
class Run {
 public:
  Run(const Job& job, pid_t guardian, Watchdog& watchdog, SignalFd& signals,
      const SuperviseOptions& o)
      : job_(job), watchdog_(watchdog), signals_(signals), o_(o), leftovers_(job.pid, guardian) {}

  // Loops until the leader has exited and nothing of the job is left.
  void loop() {
    while (leader_alive() || leftovers_.any()) {
      if (!leader_alive()) drain();
      wait_for_event();
      handle_signals();
      if (!leader_alive()) reap_children();
      if (lost_ && leader_alive() && !killed_ && SteadyClock::now() >= kill_at_) {
        kill(-job_.pid, SIGKILL);
        killed_ = true;
      }
      if (!lost_) renew();
    }
  }

  bool lost() const { return lost_; }
  int status() const { return status_.value_or(0); }

 private:
  bool leader_alive() const { return !status_; }

  void wait_for_event() {
    auto now = SteadyClock::now();
    Deadline wake = lost_ ? Deadline::max() : watchdog_.next_due();
    if (kill_at_ > now) wake = std::min(wake, kill_at_);
    if (!leader_alive()) wake = std::min(wake, now + kGroupPollInterval);
    // An absolute timer on the boot clock, so that a deadline passed during a host suspend
    // fires at once on resume.
    timer_.arm(wake);
    pollfd p[2] = {{signals_.fd(), POLLIN, 0}, {timer_.fd(), POLLIN, 0}};
    poll(p, 2, -1);
    timer_.clear();
  }

  void handle_signals() {
    while (auto s = signals_.next()) {
      if (*s == SIGCHLD) {
        reap_children();
      } else if (is_forwarded(*s)) {
        if (o_.verbose)
          o_.verbose("forwarding signal " + std::to_string(*s) + " to the job's process group");
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
    if (pid < 0 && errno == ECHILD && leader_alive()) status_ = 0;  // reaped by someone else
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

  // The leader is gone but processes of the job remain: they must not run on after the
  // lock is released, so they get the stop signal and, after --kill-after, KILL.
  void drain() {
    if (!draining_ && !lost_ && o_.verbose) {
      o_.verbose("the command exited but left processes behind; stopping them");
    }
    if (!draining_ && !lost_) kill_at_ = SteadyClock::now() + o_.kill_after;
    draining_ = true;
    bool hard = SteadyClock::now() >= kill_at_;
    leftovers_.signal(hard ? SIGKILL : o_.on_lost_signal, hard);
    if (!hard && o_.on_lost_signal != SIGCONT) leftovers_.signal(SIGCONT, true);
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
  bool killed_ = false;
  Leftovers leftovers_;
  BootTimer timer_;
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
  Run run(job, guardian.pid(), watchdog, signals, options);
  run.loop();
  restore_terminal(job);

  // Nothing of the job is left. Release first: a waiter's handoff should not wait for the
  // guardian's bookkeeping.
  if (run.lost()) {
    guardian.finish();
    return kExitLockLost;
  }
  auto held_for = std::chrono::duration_cast<Millis>(SteadyClock::now() - options.acquired_at);
  std::string why;
  auto released = watchdog.release(std::max(options.min_hold - held_for, Millis(0)), &why);
  guardian.finish();
  if (released == Watchdog::Released::kNotHeld) {
    if (options.warn) options.warn("lock lost before the command ended: " + why);
    return kExitLockLost;
  }
  if (released == Watchdog::Released::kUnreachable && options.warn) {
    options.warn("could not release the lock (" + why + "); it expires when its lease runs out");
  }
  return exit_code_of(run.status());
}

}  // namespace rlock::exec
