#pragma once

#include <stdexcept>
#include <string>

namespace rlock::redis {

// While one is in scope, readiness of its file descriptor cuts short any wait of this
// thread for a Redis reply (Connection::await_fd, QuorumMembers::exchange). exec's renewals
// wait on the job's pidfd too: a job that ends while a server does not answer is seen at once,
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
// Not an Error: no code that handles a server's failure (the sentinels asked in turn, a
// MultiLock's members renewed all the same) takes it for one; only the scope's owner
// catches it.
struct InterruptedError : std::runtime_error {
  explicit InterruptedError(const std::string& m) : std::runtime_error(m) {}
};

}  // namespace rlock::redis
