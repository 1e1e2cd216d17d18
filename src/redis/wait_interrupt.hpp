#pragma once

#include <string>

#include "util/error.hpp"

namespace rlock::redis {

// While one is in scope, readiness of its file descriptor cuts short any wait of this
// thread for a Redis reply (Connection::await_fd, Quorum's exchange). exec's renewals wait
// on the job's pidfd too: a job that ends while a server does not answer is seen at once,
// ran under the hold all along, and keeps its own exit status (exec/watchdog.cpp).
class WaitInterrupt {
 public:
  explicit WaitInterrupt(int fd);  // -1: nothing cuts a wait short
  ~WaitInterrupt();
  WaitInterrupt(const WaitInterrupt&) = delete;
  WaitInterrupt& operator=(const WaitInterrupt&) = delete;

  // The innermost scope's descriptor, or -1.
  static int fd();

 private:
  int previous_;
};

// A wait for Redis that WaitInterrupt's descriptor cut short: the request may have run.
struct InterruptedError : Error {
  explicit InterruptedError(const std::string& m) : Error(kExitUnavailable, m) {}
};

}  // namespace rlock::redis
