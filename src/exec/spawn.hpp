#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rlock::exec {

struct JobSpec {
  std::vector<std::string> argv;                         // exactly what runs: execvp, no shell
  std::vector<std::pair<std::string, std::string>> env;  // added to rlock's environment
  std::vector<std::string> unset;         // names removed from rlock's environment (secrets)
  const sigset_t* signal_mask = nullptr;  // the mask the job starts with
  int cgroup_dir_fd = -1;                 // the job's cgroup directory; -1: no cgroup
  std::int64_t valid_until_ns = 0;        // the lease deadline (boot clock), for the guardian
};

// A job started in its own process group (pgid == pid).
struct Job {
  pid_t pid = -1;
  bool took_terminal = false;  // the group was made the terminal's foreground group
  bool in_cgroup = false;      // the job runs in the cgroup of cgroup_dir_fd
  int cgroup_errno = 0;        // why it does not (cgroup_dir_fd given but not in_cgroup)
};

// Starts the job with vfork + execvp (clone3 with CLONE_VM | CLONE_VFORK, born in the job's
// cgroup, when there is one), so starting it costs no copy of rlock's memory. Before it
// execs, the child announces its pid and the lease deadline on `announce_fd` (the
// guardian's socket): there is no moment in which the job runs outside its cgroup or
// unknown to the guardian, and one message wakes the guardian instead of two. Without
// clone3 the child moves itself into the cgroup (writing cgroup.procs) before it execs.
// If the command cannot be executed, throws Error with exit 127 (not found) or 126.
Job start_job(const JobSpec& spec, int announce_fd);

// Gives the terminal back to rlock's group if the job's group has it.
void restore_terminal(const Job& job);

}  // namespace rlock::exec
