#pragma once

#include <memory>
#include <string>

#include "prim/hold.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"

namespace rlock::exec {

// Keeps a hold's lease alive: renews every lease/3, retries while Redis is unreachable, and
// declares the hold lost when a renewal finds it gone or when Redis stayed unreachable
// until the hold's deadline (the send time of the last confirmed renewal plus the lease).
class Watchdog {
 public:
  enum class State { kHeld, kLost, kUnreachable };

  Watchdog(std::unique_ptr<prim::Hold> hold, redis::Topology& topology);

  // When the next renewal is due.
  Deadline next_due() const { return next_due_; }
  // From this moment on the server may expire the hold (boot clock).
  Deadline lease_deadline() const { return hold_->deadline(); }
  Millis lease() const { return hold_->lease(); }
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
  std::unique_ptr<prim::Hold> hold_;
  redis::Topology& topology_;
  Deadline next_due_;
  std::string lost_reason_;
};

}  // namespace rlock::exec
