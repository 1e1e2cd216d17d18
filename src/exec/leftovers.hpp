#pragma once

#include <sys/types.h>

#include <set>

namespace rlock::exec {

// What is left of a job after its leader exited: members of its process group, and
// processes that left the group (setsid) but came back to rlock, the job's subreaper, as
// orphans. rlock must not release the lock while any of them runs.
class Leftovers {
 public:
  // `guardian` is rlock's one child that is not part of the job.
  Leftovers(pid_t pgid, pid_t guardian) : pgid_(pgid), guardian_(guardian) {}

  // True while any member of the group or any child of rlock but the guardian exists.
  bool any() const;
  // Sends `signo` to the group and to each child (its whole group if it leads one), once
  // per process unless `again`: processes that turn up later get it on the next call.
  void signal(int signo, bool again);

 private:
  std::set<pid_t> children() const;

  pid_t pgid_;
  pid_t guardian_;
  std::set<pid_t> signalled_;
};

}  // namespace rlock::exec
