#include "cli/stdout_writer.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace rlock::cli {

size_t write_stdout(const std::string& text, int* error) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  size_t done = 0;
  *error = 0;
  while (done < text.size()) {
    ssize_t n = write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A non-blocking stdout (set by whoever shares it) that is full: wait until it drains.
      pollfd p{STDOUT_FILENO, POLLOUT, 0};
      if (poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
    }
    if (n <= 0) {
      *error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (*error == EPIPE && !sigismember(&old, SIGPIPE)) {
    // This write's SIGPIPE is pending: take it, so that restoring the mask does not deliver it.
    timespec now{0, 0};
    sigtimedwait(&pipe_only, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return done;
}

std::string stdout_failure(int error) {
  return "writing to stdout: " + std::string(std::strerror(error));
}

}  // namespace rlock::cli
