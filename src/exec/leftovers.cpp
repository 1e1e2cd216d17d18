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

// rlock's live children but the guardian, from /proc (rlock is single-threaded: its one
// task is its pid).
std::set<pid_t> Leftovers::children() const {
  std::string pid = std::to_string(getpid());
  std::ifstream in("/proc/" + pid + "/task/" + pid + "/children");
  std::set<pid_t> out;
  pid_t child;
  while (in >> child) {
    if (child != guardian_) out.insert(child);
  }
  return out;
}

bool Leftovers::any() const { return group_alive(pgid_) || (has_children() && !children().empty()); }

void Leftovers::signal(int signo, bool again) {
  if (again || signalled_.insert(-pgid_).second) kill(-pgid_, signo);
  for (pid_t child : children()) {
    if (!again && !signalled_.insert(child).second) continue;
    kill(getpgid(child) == child ? -child : child, signo);
  }
}

}  // namespace rlock::exec
