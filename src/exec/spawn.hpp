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
  const sigset_t* signal_mask = nullptr;  // the mask the job starts with
};

// A job started in its own process group (pgid == pid).
struct Job {
  pid_t pid = -1;
  bool took_terminal = false;  // the group was made the terminal's foreground group
};

// Starts the job. `before_exec` runs in rlock between fork and letting the child exec,
// so that whatever must watch the job (the guardian) exists before the job runs.
// If the command cannot be executed, throws Error with exit 127 (not found) or 126.
Job start_job(const JobSpec& spec, void (*before_exec)(pid_t pgid, void* ctx), void* ctx);

// Gives the terminal back to rlock's group if the job had taken it.
void restore_terminal(const Job& job);

}  // namespace rlock::exec
