#pragma once

#include <sys/types.h>

#include <utility>

#include "exec/fd.hpp"
#include "util/duration.hpp"

namespace rlock::exec {

// A tiny process that outlives rlock for one purpose: if rlock dies (even by SIGKILL)
// while the job runs, nobody renews the lease, so the job's process group must stop.
// It is started before the lock is taken, off the path from acquisition to the job's
// start. The job announces its pid on the guardian's socket before it execs; when the
// socket then closes without a "done" byte (rlock died), the guardian sends the group `signo`
// and, after `kill_after`, SIGKILL.
class Guardian {
 public:
  Guardian() = default;
  Guardian(Guardian&& o) noexcept = default;
  Guardian& operator=(Guardian&&) = delete;
  // Without finish(): the socket closes as if rlock died (the group, if any, is stopped).
  ~Guardian() = default;

  static Guardian start(int signo, Millis kill_after);

  // The socket the job sends its pid to (close-on-exec, so the job keeps no copy).
  int announce_fd() const { return life_.get(); }
  // The job's group is gone: the guardian exits without doing anything.
  void finish();
  // A child of rlock, but no part of the job.
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  Fd life_;  // write end; closes when rlock dies
};

// True while any process of the group exists (zombies included).
bool group_alive(pid_t pgid);

// No event announces that a process group became empty, so whoever waits for that checks
// this often; it only happens while a job is being stopped.
inline constexpr Millis kGroupPollInterval{20};

}  // namespace rlock::exec
