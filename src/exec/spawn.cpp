#include "exec/spawn.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "exec/fd.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

bool in_terminal_foreground() { return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp(); }

// Runs in the forked child: only async-signal-safe work except setenv, which is safe
// here because rlock is single-threaded.
[[noreturn]] void child_main(const JobSpec& spec, int go_fd, int err_fd, bool take_terminal) {
  setpgid(0, 0);
  if (take_terminal) {
    signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpid());
    signal(SIGTTOU, SIG_DFL);
  }
  char go = 0;
  if (read(go_fd, &go, 1) != 1) _exit(127);  // rlock died before the guardian was up
  for (const auto& [k, v] : spec.env) setenv(k.c_str(), v.c_str(), 1);
  if (spec.signal_mask) sigprocmask(SIG_SETMASK, spec.signal_mask, nullptr);
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  int e = errno;
  (void)!write(err_fd, &e, sizeof e);
  _exit(127);
}

Error exec_error(const std::string& cmd, int e) {
  bool not_found = e == ENOENT || e == ENOTDIR;
  return Error(not_found ? 127 : 126, "cannot run '" + cmd + "': " + std::strerror(e) +
                                          (not_found ? " (command not found)" : ""));
}

}  // namespace

std::pair<Fd, Fd> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(71, std::string("pipe: ") + std::strerror(errno));
  return {Fd(fds[0]), Fd(fds[1])};
}

Job start_job(const JobSpec& spec, void (*before_exec)(pid_t, void*), void* ctx) {
  auto [go_r, go_w] = make_pipe();
  auto [err_r, err_w] = make_pipe();
  Job job;
  job.took_terminal = in_terminal_foreground();
  job.pid = fork();
  if (job.pid < 0) throw Error(71, std::string("fork: ") + std::strerror(errno));
  if (job.pid == 0) child_main(spec, go_r.get(), err_w.get(), job.took_terminal);
  setpgid(job.pid, job.pid);  // also here: no race with the child's own call
  go_r.reset();
  err_w.reset();
  if (before_exec) before_exec(job.pid, ctx);
  (void)!write(go_w.get(), "g", 1);
  go_w.reset();
  int e = 0;
  if (read(err_r.get(), &e, sizeof e) == static_cast<ssize_t>(sizeof e)) {
    waitpid(job.pid, nullptr, 0);
    restore_terminal(job);
    throw exec_error(spec.argv.front(), e);
  }
  return job;
}

void restore_terminal(const Job& job) {
  if (!job.took_terminal) return;
  signal(SIGTTOU, SIG_IGN);
  tcsetpgrp(STDIN_FILENO, getpgrp());
  signal(SIGTTOU, SIG_DFL);
}

}  // namespace rlock::exec
