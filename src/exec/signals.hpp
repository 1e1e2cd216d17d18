#pragma once

#include <signal.h>

#include <optional>

namespace rlock::exec {

// Blocks the signals rlock forwards (INT, TERM, HUP, QUIT) and SIGCHLD, and delivers
// them through a signalfd, so a wait or the supervision loop can poll for them next to
// sockets and timers. Restores the previous mask when destroyed (move-only).
class SignalFd {
 public:
  SignalFd();
  ~SignalFd();
  SignalFd(SignalFd&&) = delete;
  SignalFd& operator=(SignalFd&&) = delete;

  int fd() const { return fd_; }
  // The next pending signal number, or nullopt when none is pending.
  std::optional<int> next();
  // The mask rlock started with, before the outermost live SignalFd: what the child must
  // get back before exec (a SignalFd made while another lives, as a --forever consumer
  // keeps one between its items, would otherwise hand the child a blocked mask).
  const sigset_t& original_mask() const;

 private:
  int fd_ = -1;
  sigset_t original_{};  // restored when destroyed
};

// rlock's plain connections write with MSG_NOSIGNAL, but TLS ones write through OpenSSL's
// socket BIO, which cannot pass it: a server that closes the connection under a request (at
// maxclients it accepts, says so and closes) would kill rlock with SIGPIPE before it could
// say why. Called first in main:
// rlock ignores SIGPIPE (a write fails with EPIPE and is reported), and the jobs it starts
// get back the disposition it had (see sigpipe_was_default).
void ignore_sigpipe();
// Whether SIGPIPE was at its default disposition before ignore_sigpipe(): a job must die of
// it as it would have without rlock (`yes | head` inside `rlock exec`).
bool sigpipe_was_default();

// The signals forwarded to the job's process group.
bool is_forwarded(int signo);

// Parses a signal given as `TERM`, `SIGTERM`, `term` or a number. Throws UsageError.
int parse_signal(const char* text);

}  // namespace rlock::exec
