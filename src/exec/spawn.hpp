#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace rlock::exec {

struct JobSpec {
  std::vector<std::string> argv;  // exactly what runs: execvp, no shell
  std::vector<std::pair<std::string, std::string>> env;  // added to rlock's environment
  std::vector<std::string> unset;  // names removed from rlock's environment (secrets)
  const sigset_t* signal_mask = nullptr;  // the mask the job starts with
};

// A job started in its own process group (pgid == pid).
struct Job {
  pid_t pid = -1;
  bool took_terminal = false;  // the group was made the terminal's foreground group
};

// Starts the job with vfork + execvp, so starting it costs no copy of rlock's memory.
// Before it execs, the child writes its pid to `announce_fd` (the guardian's pipe): there
// is no moment in which the job runs and the guardian does not know it.
// If the command cannot be executed, throws Error with exit 127 (not found) or 126.
Job start_job(const JobSpec& spec, int announce_fd);

// Gives the terminal back to rlock's group if the job had taken it.
void restore_terminal(const Job& job);

}  // namespace rlock::exec
