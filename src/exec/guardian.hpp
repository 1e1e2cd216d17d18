#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

#include "exec/fd.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::exec {

// A tiny process that outlives rlock for one purpose: the job must not run past its lease,
// even when rlock cannot stop it (killed, even by SIGKILL; stopped; hung). It is started
// before the lock is taken, off the path from acquisition to the job's start, in a process
// group of its own that ignores SIGHUP, SIGINT, SIGQUIT, SIGTSTP, SIGTTIN and SIGTTOU, so
// terminal and job-control signals aimed at rlock's group do not reach it.
//
// The job's child announces its pid and the lease deadline T before it execs; rlock tells
// it every later "valid until T" (valid_until()) after each confirmed renewal. Then:
//  - if no newer T arrives, at T - kill_after - margin it sends the job `signo` (and CONT),
//    and at T - margin SIGKILL;
//  - if its socket closes without a "done" message (rlock died), it does the same at once,
//    with KILL after kill_after but no later than T - margin, then removes the job's cgroup.
// The job is its process group and, if `cgroup_dir` is not empty, every process in that
// cgroup (the KILL is then cgroup.kill). Before it stops a job while rlock lives, it says
// so on the socket (a "valid until" that came too late, under load), so that rlock reports
// the stop instead of passing the job's TERM on as its own status.
class Guardian {
 public:
  Guardian() = default;
  Guardian(Guardian&& o) noexcept = default;
  Guardian& operator=(Guardian&&) = delete;
  // Without finish(): the socket closes as if rlock died (the job, if any, is stopped).
  ~Guardian() = default;

  static Guardian start(int signo, Millis kill_after, Millis margin, const std::string& cgroup_dir);

  // The socket the job sends its pid to (close-on-exec, so the job keeps no copy).
  int announce_fd() const { return life_.get(); }
  // The lease is valid until `t` (boot clock): the guardian's stop point moves there.
  // Returns 0, or the errno of a message that did not reach the guardian.
  [[nodiscard]] int valid_until(Deadline t);
  // The job is gone: the guardian exits without doing anything.
  void finish();
  // Readable when the guardian has news (see news()).
  int news_fd() const { return life_.get(); }
  enum class News { kNone, kStopping, kGone };
  // Without blocking: kStopping once the guardian has begun stopping the job (its stop
  // point passed before a newer "valid until" reached it), kGone if it has exited.
  News news();
  // A child of rlock, but no part of the job.
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  Fd life_;  // rlock's end; closes when rlock dies
};

// One message on the guardian's socket (SOCK_SEQPACKET: one message per send).
struct GuardianMessage {
  std::int32_t kind;
  std::int32_t pid;      // kGuardianJob: the job's pid (= its process group)
  std::int64_t boot_ns;  // kGuardianValidUntil, kGuardianJob: lease deadline, boot clock
};
inline constexpr std::int32_t kGuardianJob = 1;
inline constexpr std::int32_t kGuardianValidUntil = 2;
inline constexpr std::int32_t kGuardianDone = 3;
inline constexpr std::int32_t kGuardianStopping = 4;  // from the guardian: it stops the job

// True while any process of the group exists (zombies included).
bool group_alive(pid_t pgid);

// No event announces that a process group became empty, so whoever waits for that checks
// this often; it only happens while a job is being stopped.
inline constexpr Millis kGroupPollInterval{20};

}  // namespace rlock::exec
