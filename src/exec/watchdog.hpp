#pragma once

#include <optional>
#include <string>

#include "prim/key_layout.hpp"
#include "prim/lock.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace rlock::exec {

// Keeps a held lock's lease alive: renews every lease/3, reconnects when Redis drops, and
// declares the lock lost when a renewal finds another state or when Redis stayed
// unreachable until the lease deadline (measured on the monotonic clock from the last
// renewal that was sent and confirmed).
class Watchdog {
 public:
  enum class State { kHeld, kLost, kUnreachable };

  Watchdog(redis::Connection conn, const prim::KeyLayout& layout, std::string name,
           std::string owner, Millis lease, Deadline acquired_at);

  // When the next renewal is due.
  Deadline next_due() const { return next_due_; }
  // Renews if due. kUnreachable means still within the lease: it will retry.
  State tick();
  // Why the lock was lost, for the one-line message.
  const std::string& lost_reason() const { return lost_reason_; }

  enum class Released { kReleased, kNotHeld, kUnreachable };
  // Releases the hold; with `keep` > 0 the lock stays held that much longer. kNotHeld: the
  // lock was lost after the last renewal; kUnreachable: Redis could not be reached and the
  // lease will expire by itself. `why` says more for both.
  Released release(Millis keep, std::string* why);

 private:
  prim::Lock& lock();

  redis::ConnectOptions options_;
  std::optional<redis::Connection> conn_;
  const prim::KeyLayout& layout_;
  std::string name_;
  std::string owner_;
  Millis lease_;
  Deadline lease_deadline_;
  Deadline next_due_;
  std::optional<prim::Lock> lock_;
  std::string lost_reason_;
};

}  // namespace rlock::exec
