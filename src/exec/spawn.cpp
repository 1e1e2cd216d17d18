#include "exec/spawn.hpp"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

extern char** environ;

namespace rlock::exec {
namespace {

bool in_terminal_foreground() { return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp(); }

// Everything the vfork child needs, prepared by the parent: the child may only make
// async-signal-safe calls and must not allocate.
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  int announce_fd = -1;
  bool take_terminal = false;
  const sigset_t* mask = nullptr;
  sigset_t with_ttou{};
  int exec_errno = 0;  // written by the child (shared memory under vfork)
};

std::vector<std::string> merged_environment(const JobSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& name : spec.unset) {
      replaced = replaced || (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
                              entry[name.size()] == '=');
    }
    for (const auto& kv : spec.env) {
      replaced = replaced || (entry.size() > kv.first.size() && entry.substr(0, kv.first.size()) == kv.first &&
                              entry[kv.first.size()] == '=');
    }
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  return env;
}

[[noreturn]] void child_main(ChildPlan* plan) {
  setpgid(0, 0);
  if (plan->take_terminal) {
    sigprocmask(SIG_BLOCK, &plan->with_ttou, nullptr);  // a background tcsetpgrp would stop us
    tcsetpgrp(STDIN_FILENO, getpid());
  }
  pid_t self = getpid();
  (void)!send(plan->announce_fd, &self, sizeof self, MSG_NOSIGNAL);
  if (plan->mask) sigprocmask(SIG_SETMASK, plan->mask, nullptr);
  execvpe(plan->argv[0], plan->argv.data(), plan->envp.data());
  plan->exec_errno = errno;
  _exit(127);
}

// Kept apart so that no local of the caller lives across vfork's second return.
pid_t vfork_child(ChildPlan* plan) {
  pid_t pid = vfork();
  if (pid == 0) child_main(plan);
  return pid;
}

Error exec_error(const std::string& cmd, int e) {
  bool not_found = e == ENOENT || e == ENOTDIR;
  return Error(not_found ? 127 : 126, "cannot run '" + cmd + "': " + std::strerror(e) +
                                          (not_found ? " (command not found)" : ""));
}

}  // namespace

Job start_job(const JobSpec& spec, int announce_fd) {
  std::vector<std::string> env = merged_environment(spec);
  ChildPlan plan;
  for (const auto& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (auto& e : env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.announce_fd = announce_fd;
  plan.take_terminal = in_terminal_foreground();
  plan.mask = spec.signal_mask;
  sigemptyset(&plan.with_ttou);
  sigaddset(&plan.with_ttou, SIGTTOU);

  Job job;
  job.took_terminal = plan.take_terminal;
  job.pid = vfork_child(&plan);
  if (job.pid < 0) throw Error(71, std::string("vfork: ") + std::strerror(errno));
  if (plan.exec_errno != 0) {  // the child has exited (vfork resumes us after exec or _exit)
    waitpid(job.pid, nullptr, 0);
    restore_terminal(job);
    throw exec_error(spec.argv.front(), plan.exec_errno);
  }
  return job;
}

void restore_terminal(const Job& job) {
  if (!job.took_terminal) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, getpgrp());
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace rlock::exec
