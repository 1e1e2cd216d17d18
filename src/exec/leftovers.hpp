#pragma once

#include <sys/types.h>

#include <set>

#include "exec/cgroup.hpp"

namespace rlock::exec {

// What is left of a job after its leader exited. With a cgroup, exactly the processes in
// it. Without: members of its process group, and processes that left the group (setsid)
// but came back to rlock, the job's subreaper, as orphans. Children rlock had before the
// job started (`sh -c 'x & exec rlock exec ...'`) and processes in rlock's own process
// group are not the job. rlock must not release the lock while any of the job runs.
class Leftovers {
 public:
  // `cgroup`: the job's cgroup if the job is in one, else nullptr. `not_job`: rlock's
  // children that are no part of the job (the guardian, children from before the job).
  Leftovers(pid_t pgid, const JobCgroup* cgroup, std::set<pid_t> not_job)
      : pgid_(pgid), cgroup_(cgroup), not_job_(std::move(not_job)) {}

  // True while any process of the job exists.
  bool any() const;
  // Sends `signo` to each process of the job (its whole group if it leads one), once per
  // process unless `again`: processes that turn up later get it on the next call.
  // SIGKILL with a cgroup goes through cgroup.kill.
  void signal(int signo, bool again);

  // rlock's live children now (rlock is single-threaded: its one task is its pid).
  static std::set<pid_t> children_of_rlock();

 private:
  std::set<pid_t> children() const;

  pid_t pgid_;
  const JobCgroup* cgroup_;
  std::set<pid_t> not_job_;
  std::set<pid_t> signalled_;
};

}  // namespace rlock::exec
