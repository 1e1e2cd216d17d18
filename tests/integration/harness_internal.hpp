// Private helpers of the harness's .cpp files, not for tests: errors from errno, pidfds,
// polling a descriptor, and spawning a child process.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string>
#include <system_error>
#include <vector>

#include "timing.hpp"

namespace rlock::test::detail {

[[noreturn]] inline void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

inline int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

inline int poll_timeout_ms(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

// Waits until `fd` is readable or the deadline passes; true if readable.
inline bool poll_readable(int fd, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) throw_errno("poll");
  }
}

// Starts argv[0] (PATH search) with stdin from /dev/null, `out_fd`/`err_fd` as stdout and
// stderr, every other descriptor closed, default signal dispositions, an empty mask.
inline pid_t spawn_process(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv.at(0).c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "posix_spawnp " + argv[0]);
  return pid;
}

}  // namespace rlock::test::detail
