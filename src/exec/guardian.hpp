#pragma once

#include <sys/types.h>

#include <utility>

#include "exec/fd.hpp"
#include "util/duration.hpp"

namespace rlock::exec {

// A tiny process that outlives rlock for one purpose: if rlock dies (even by SIGKILL)
// while the job runs, nobody renews the lease, so the job's process group must stop. It
// notices rlock's death when the pipe it reads from closes without a "done" byte, then
// sends the group `signo` and, after `kill_after`, SIGKILL.
class Guardian {
 public:
  Guardian() = default;
  Guardian(Guardian&& o) noexcept : pid_(std::exchange(o.pid_, -1)), life_(std::move(o.life_)) {}
  Guardian& operator=(Guardian&&) = delete;
  // Tells the guardian the job is over and reaps it.
  ~Guardian();

  static Guardian start(pid_t pgid, int signo, Millis kill_after);

 private:
  pid_t pid_ = -1;
  Fd life_;  // write end; closes when rlock dies
};

// Sends the group `signo`; if members remain after `kill_after`, SIGKILL. Returns when the
// group is empty. Used by the guardian and when a finished job left processes behind.
void stop_group(pid_t pgid, int signo, Millis kill_after);

// True while any process of the group exists.
bool group_alive(pid_t pgid);

}  // namespace rlock::exec
