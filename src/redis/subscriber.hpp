#pragma once

#include <string>

#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace rlock::redis {

// A connection in subscribe mode on one channel, used to sleep until a release is
// published. It never lets a socket timeout end a wait: it polls the socket itself with
// the wait's own deadline, so a long --wait is not cut short by --timeout.
class Subscriber {
 public:
  enum class Wake { kMessage, kTimeout, kInterrupted };

  // Opens its own connection and subscribes. Throws UnavailableError.
  static Subscriber open(const ConnectOptions& options, const std::string& channel);

  // Sleeps until a message arrives on the channel, `until` passes, or `interrupt_fd`
  // (if >= 0) becomes readable. Messages that arrived earlier count. Throws IoError when
  // the connection drops.
  Wake wait(Deadline until, int interrupt_fd = -1);

 private:
  explicit Subscriber(Connection conn) : conn_(std::move(conn)) {}
  bool take_buffered_message();

  Connection conn_;
};

}  // namespace rlock::redis
