#include "exec/supervisor.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

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

bool is_terminal_stop(int signo) {
  return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

// The supervision state: the job's leader, the rest of the job, the lease.
class Run {
 public:
  Run(const Job& job, Guardian& guardian, Watchdog& watchdog, SignalFd& signals,
      const SuperviseOptions& o, const JobCgroup* cgroup, Leftovers leftovers)
      : job_(job),
        guardian_(guardian),
        watchdog_(watchdog),
        signals_(signals),
        o_(o),
        cgroup_(cgroup),
        leftovers_(std::move(leftovers)),
        told_(watchdog.lease_deadline()),
        on_terminal_(job.took_terminal ||
                     (isatty(STDIN_FILENO) && tcgetsid(STDIN_FILENO) == getsid(0))),
        pidfd_(static_cast<int>(syscall(SYS_pidfd_open, job.pid, 0))) {}
  ~Run() {
    if (pidfd_ >= 0) close(pidfd_);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // Loops until the leader has exited and nothing of the job is left.
  void loop() {
    while (leader_alive() || leftovers_.any()) {
      if (!leader_alive()) drain();
      wait_for_event();
      handle_signals();
      if (!leader_alive()) reap_children();
      if (job_stopped_) stop_with_job();
      if (lost_ && leader_alive() && !killed_ && SteadyClock::now() >= kill_at_) {
        signal_job(SIGKILL);
        killed_ = true;
      }
      // Once nothing of the job is left, there is nothing to renew for: the release follows.
      if (!lost_ && (leader_alive() || leftovers_.any())) renew();
    }
  }

  bool lost() const { return lost_; }
  int status() const { return status_.value_or(0); }
  // When rlock saw the leader end (at the latest).
  Deadline ended_at() const { return ended_at_; }

 private:
  bool leader_alive() const { return !status_; }

  void wait_for_event() {
    auto now = SteadyClock::now();
    Deadline wake = lost_ ? Deadline::max() : watchdog_.next_due();
    if (kill_at_ > now) wake = std::min(wake, kill_at_);
    if (!leader_alive()) wake = std::min(wake, now + kGroupPollInterval);
    // A timer on the boot clock, so that a deadline passed during a host suspend fires at
    // once on resume.
    int timeout = -1;
    if (int err = timer_.arm(wake)) {
      // Nothing would wake rlock to renew or to stop the job: the lease cannot be kept.
      // Stopping goes on with poll timeouts, which at worst wake late after a suspend.
      if (!lost_) {
        lose(std::string("cannot arm the renewal timer (timerfd_settime: ") + std::strerror(err) +
             ")");
        return;
      }
      if (wake != Deadline::max()) timeout = static_cast<int>(millis_until(wake).count());
    }
    std::vector<pollfd> p = {{signals_.fd(), POLLIN, 0}, {timer_.fd(), POLLIN, 0}};
    if (!guardian_gone_) p.push_back({guardian_.news_fd(), POLLIN, 0});
    const size_t watched = p.size();
    if (!lost_) {
      for (int fd : watchdog_.watch_fds()) p.push_back({fd, POLLIN, 0});
    }
    poll(p.data(), p.size(), timeout);
    timer_.clear();
    if (!guardian_gone_ && p[2].revents) hear_guardian();
    for (size_t i = watched; i < p.size(); ++i) {
      if (p[i].revents) {
        watchdog_.hear();
        break;
      }
    }
  }

 public:
  // What the guardian did on its own: it stopped the job (its stop point passed before
  // rlock's "valid until" reached it), or it is gone. Either way the lease was at stake.
  void hear_guardian() {
    switch (guardian_.news()) {
      case Guardian::News::kNone:
        return;
      case Guardian::News::kStopping:
        // A renewal that failed says more than rlock's own slowness (which it may also be).
        if (!lost_) {
          const std::string& failed = watchdog_.last_error();
          lose(std::string("lock lost: the guardian began stopping the job, as no renewal "
                           "reached it before the job's stop point (") +
                   (failed.empty() ? "rlock was stopped, paused or too slow"
                                   : "the last renewal failed: " + failed) +
                   ")",
               false);
        }
        return;
      case Guardian::News::kGone:
        guardian_gone_ = true;
        if (!lost_ && leader_alive()) {
          lose("the guardian is gone: nothing would stop the job if rlock could not");
        }
        return;
    }
  }

 private:
  void handle_signals() {
    while (auto s = signals_.next()) {
      if (*s == SIGCHLD) {
        reap_children();
      } else if (is_forwarded(*s)) {
        if (o_.verbose)
          o_.verbose("forwarding signal " + std::to_string(*s) + " to the job's process group");
        kill(-job_.pid, *s);
        if (o_.forwarded) o_.forwarded(*s);
      }
    }
  }

  // rlock is the job's subreaper: orphans of the job are reparented to it, and reaping
  // them here keeps zombies from looking like live members of the group. Children that
  // are not the job are reaped too, and otherwise left alone.
  void reap_children() {
    int st = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
      if (pid != job_.pid) continue;
      if (WIFSTOPPED(st)) {
        job_stopped_ = on_terminal_ && is_terminal_stop(WSTOPSIG(st));
        continue;
      }
      status_ = st;
      ended_at_ = SteadyClock::now();
    }
    if (pid < 0 && errno == ECHILD && leader_alive()) {
      status_ = 0;  // reaped by someone else
      ended_at_ = SteadyClock::now();
    }
  }

  // The job was stopped by the terminal (^Z, or it read the terminal from the
  // background): do as the shell expects of a stopped job, by stopping rlock itself.
  void stop_with_job() {
    job_stopped_ = false;
    if (tcgetpgrp(STDIN_FILENO) == job_.pid) set_foreground(getpgrp());
    if (o_.verbose) {
      o_.verbose(
          "the job was stopped; stopping rlock too (nothing renews the lease while stopped)");
    }
    kill(getpid(), SIGSTOP);  // only rlock: the job's group is stopped already
    // Continued by fg or bg: the job gets the terminal only if rlock has it (fg).
    if (tcgetpgrp(STDIN_FILENO) == getpgrp()) set_foreground(job_.pid);
    kill(-job_.pid, SIGCONT);
  }

  static void set_foreground(pid_t pgid) {
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(STDIN_FILENO, pgid);
    sigprocmask(SIG_SETMASK, &old, nullptr);
  }

  void renew() {
    // While the leader runs, its end cuts a renewal's wait short (a frozen server would
    // keep rlock from seeing it until the stop point, and report a job that ended under
    // the hold as lost); the next turn of the loop reaps it.
    const bool leader = leader_alive();
    const Watchdog::State state = watchdog_.tick(leader ? pidfd_ : -1);
    if (leader) reap_children();
    switch (state) {
      case Watchdog::State::kHeld:
        if (watchdog_.lease_deadline() != told_) {
          told_ = watchdog_.lease_deadline();
          // A guardian that cannot be told would stop the job at the old deadline, and one
          // that is gone no longer backs rlock up: either way the job stops now.
          if (int err = guardian_.valid_until(told_)) {
            lose(std::string("cannot tell the guardian the renewed lease (") + std::strerror(err) +
                 ")");
          }
        }
        return;
      case Watchdog::State::kUnreachable:
        if (o_.verbose) o_.verbose("lease renewal failed, retrying: " + watchdog_.lost_reason());
        return;
      case Watchdog::State::kLost:
        lose("lock lost: " + watchdog_.lost_reason());
        return;
    }
  }

  // The job must stop: the hold is gone, or rlock can no longer keep it; `why` is the line.
  // `signal`: false when the guardian has signalled the job already.
  void lose(const std::string& why, bool signal = true) {
    lost_ = true;
    if (o_.warn) o_.warn(why + "; stopping the job");
    if (signal) signal_job(o_.on_lost_signal);
    killed_ = o_.on_lost_signal == SIGKILL;
    // Dead before the server may expire the lease, also when the lock is already gone.
    kill_at_ = std::min(SteadyClock::now() + o_.kill_after, watchdog_.lease_deadline() - o_.margin);
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

  // Sends `signo` to the job's group and, with a cgroup, to every process of the job.
  void signal_job(int signo) {
    auto send = [this](int s) {
      kill(-job_.pid, s);
      if (cgroup_) cgroup_->signal(s);
    };
    send(signo);
    if (signo != SIGKILL && signo != SIGCONT) send(SIGCONT);  // a stopped job can't act on it
  }

  const Job& job_;
  Guardian& guardian_;
  Watchdog& watchdog_;
  SignalFd& signals_;
  const SuperviseOptions& o_;
  const JobCgroup* cgroup_;
  std::optional<int> status_;
  Deadline ended_at_ = Deadline::max();
  bool lost_ = false;
  bool draining_ = false;
  bool killed_ = false;
  bool job_stopped_ = false;
  bool guardian_gone_ = false;
  Leftovers leftovers_;
  BootTimer timer_;
  Deadline kill_at_ = Deadline::max();
  Deadline told_;  // the lease deadline the guardian knows
  // rlock runs on its session's controlling terminal, so a shell may be doing job control:
  // a job stopped by the terminal (^Z, or reading it from the background) stops rlock too.
  const bool on_terminal_;
  const int pidfd_;  // the leader's (pidfd_open), or -1 where the kernel has none
};

// The job would start after its stop point (rlock was paused between the grant and now).
int refuse_to_start(Watchdog& watchdog, Guardian& guardian, const SuperviseOptions& o) {
  guardian.finish();
  std::string why;
  auto left = std::chrono::duration_cast<Millis>(watchdog.lease_deadline() - SteadyClock::now());
  watchdog.job_not_started();
  watchdog.release(Millis(0), &why);
  if (o.wait_again && o.wait_again()) {
    if (o.verbose) {
      o.verbose("the hold came too late to run the command and no renewal confirmed it (" +
                watchdog.lost_reason() + "); gave it back, waiting again");
    }
  } else if (o.warn) {
    o.warn("the lease ends " +
           (left.count() > 0 ? "in " + format_duration(left)
                             : "(ended " + format_duration(-left) + " ago)") +
           ", too soon to run the command and still stop it in time (--kill-after " +
           format_duration(o.kill_after) + " + margin " + format_duration(o.margin) +
           ") and no renewal confirmed it (" + watchdog.lost_reason() +
           "); not running the command");
  }
  return kExitLockLost;
}

// Starts the job, in its cgroup when there is one and the move worked (`cgroup` says which);
// `not_job` gets the processes that are no part of it. A failure to start releases the hold.
Job start_supervised(const JobSpec& spec, Watchdog& watchdog, Guardian& guardian,
                     const SuperviseOptions& options, std::set<pid_t>& not_job,
                     const JobCgroup*& cgroup) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Without a cgroup, children rlock already has (inherited from whoever exec'd it) are no
  // part of the job; with one, the cgroup says exactly what is.
  if (!options.cgroup) not_job = Leftovers::children_of_rlock();
  not_job.insert(guardian.pid());
  JobSpec with_cgroup = spec;
  with_cgroup.cgroup_dir_fd = options.cgroup ? options.cgroup->dir_fd() : -1;
  with_cgroup.valid_until_ns = watchdog.lease_deadline().time_since_epoch().count();
  Job job;
  try {
    job = start_job(with_cgroup, guardian.announce_fd());
  } catch (const Error&) {
    guardian.finish();
    watchdog.job_not_started();
    watchdog.release(Millis(0), nullptr);
    throw;
  }
  if (options.started) options.started();
  cgroup = job.in_cgroup ? options.cgroup : nullptr;
  if (options.cgroup && !cgroup) {
    if (options.verbose) {
      options.verbose(std::string("could not move the job into its cgroup (") +
                      std::strerror(job.cgroup_errno ? job.cgroup_errno : EBADF) +
                      "); containing it by process group and subreaper");
    }
    not_job = Leftovers::children_of_rlock();  // the job's pid is in it: keep it out
    not_job.erase(job.pid);
    not_job.insert(guardian.pid());
  }
  return job;
}

// Once nothing of the job is left: the release (kept to --min-hold) and the exit status.
int settle(Run& run, Watchdog& watchdog, Guardian& guardian, const SuperviseOptions& options) {
  // Release first: a waiter's handoff should not wait for the guardian's bookkeeping.
  if (run.lost()) {
    watchdog.give_back_rest();
    guardian.finish();
    return watchdog.cancelled() ? kExitSuperseded : kExitLockLost;
  }
  auto held_for = std::chrono::duration_cast<Millis>(SteadyClock::now() - options.acquired_at);
  std::string why;
  watchdog.job_ended(exit_code_of(run.status()));
  const Deadline lease_end = watchdog.lease_deadline();
  auto released = watchdog.release(std::max(options.min_hold - held_for, Millis(0)), &why);
  const Deadline released_at = SteadyClock::now();
  guardian.finish();
  if (released == Watchdog::Released::kNotHeld) {
    // A release that a stalled server answered only after the lease ran out may find it
    // merely expired after the command ended, or taken away before (a failover, --force):
    // nothing tells which, so the line says what is known, and the status stays 76.
    if (options.warn) {
      options.warn(run.ended_at() < lease_end && released_at >= lease_end
                       ? "lock lost or expired: the release was answered only after the lease "
                         "had run out (" +
                             why +
                             "); the command had ended within the lease, but whether the lock "
                             "was taken away before then cannot be told"
                       : "lock lost before the command ended: " + why);
    }
    return kExitLockLost;
  }
  if (released == Watchdog::Released::kUnreachable && options.warn) {
    options.warn("could not release the lock (" + why + "); it expires when its lease runs out");
  }
  return exit_code_of(run.status());
}

}  // namespace

int supervise(const JobSpec& spec, Watchdog& watchdog, SignalFd& signals, Guardian& guardian,
              const SuperviseOptions& options) {
  watchdog.stop_before_deadline(options.kill_after + options.margin);
  // A server that stalled with the acquisition answers late, on a lease that began when it
  // took the request: a renewal now confirms the hold with a fresh deadline.
  if (SteadyClock::now() >= watchdog.stop_at() && !watchdog.confirm())
    return refuse_to_start(watchdog, guardian, options);
  std::set<pid_t> not_job;
  const JobCgroup* cgroup = nullptr;
  Job job = start_supervised(spec, watchdog, guardian, options, not_job, cgroup);
  Run run(job, guardian, watchdog, signals, options, cgroup,
          Leftovers(job.pid, cgroup, std::move(not_job)));
  run.loop();
  restore_terminal(job);
  run.hear_guardian();  // its word comes before the job's death, maybe not before the SIGCHLD
  return settle(run, watchdog, guardian, options);
}

}  // namespace rlock::exec
