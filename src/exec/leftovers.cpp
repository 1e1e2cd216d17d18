#include "exec/leftovers.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "exec/guardian.hpp"

namespace rlock::exec {
namespace {

bool has_children() {
  siginfo_t info{};
  return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

}  // namespace

std::set<pid_t> Leftovers::children_of_rlock() {
  std::string pid = std::to_string(getpid());
  std::ifstream in("/proc/" + pid + "/task/" + pid + "/children");
  std::set<pid_t> out;
  pid_t child;
  while (in >> child) out.insert(child);
  return out;
}

// rlock's live children that may belong to the job.
std::set<pid_t> Leftovers::children() const {
  std::set<pid_t> out;
  pid_t own_group = getpgrp();
  for (pid_t child : children_of_rlock()) {
    if (!not_job_.contains(child) && getpgid(child) != own_group) out.insert(child);
  }
  return out;
}

bool Leftovers::any() const {
  if (group_alive(pgid_)) return true;
  if (cgroup_) return cgroup_->populated();
  return has_children() && !children().empty();
}

void Leftovers::signal(int signo, bool again) {
  if (again || signalled_.insert(-pgid_).second) kill(-pgid_, signo);
  if (cgroup_ && signo == SIGKILL) {
    cgroup_->signal(SIGKILL);
    return;
  }
  if (cgroup_) {
    for (pid_t pid : cgroup_->pids()) {
      if (again || signalled_.insert(pid).second) kill(pid, signo);
    }
    return;
  }
  for (pid_t child : children()) {
    if (!again && !signalled_.insert(child).second) continue;
    kill(getpgid(child) == child ? -child : child, signo);
  }
}

}  // namespace rlock::exec
