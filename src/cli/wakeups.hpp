#pragma once

namespace rlock::cli {

// A set of descriptors that is itself one descriptor (epoll), readable while any of them
// is ready: what a wait that takes one interrupt_fd (Subscriber::wait, Watch::wait) passes
// to be woken by signals, keys and a closed stdout alike. Move-only.
class Wakeups {
 public:
  Wakeups();
  ~Wakeups();
  Wakeups(const Wakeups&) = delete;
  Wakeups& operator=(const Wakeups&) = delete;

  // Wakes on `fd` becoming readable (`readable`), or only on its error or hang-up (a
  // pipe's write end whose reader went away). False when `fd` cannot be watched (a
  // regular file, /dev/null): it never wakes anyone then.
  bool add(int fd, bool readable = true);
  void remove(int fd);
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace rlock::cli
