#pragma once

#include <algorithm>
#include <optional>
#include <string>

#include "prim/key_layout.hpp"
#include "prim/lock.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace rlock::exec {

// Keeps a held lock's lease alive: renews every lease/3 (or sooner, see
// stop_before_deadline), reconnects when Redis drops, and
// declares the lock lost when a renewal finds another state or when no renewal was
// confirmed before the stop point (lease deadline - stop lead; the deadline is measured on
// the boot clock from the send time of the last confirmed renewal or acquisition).
class Watchdog {
 public:
  enum class State { kHeld, kLost, kUnreachable };

  Watchdog(redis::Connection conn, const prim::KeyLayout& layout, std::string name,
           std::string owner, Millis lease, Deadline acquired_at);

  // Stopping the job starts `lead` before the lease deadline (kill-after + margin): from
  // then on the lock counts as lost, and renewal attempts time out by then. Default 0.
  // Renewals then come every min(lease/3, (lease - lead)/2), so that half the time to the
  // stop point is left for a renewal to be answered or retried.
  void stop_before_deadline(Millis lead);
  // The time (boot clock) from which the server may expire the lease: send time of the
  // last confirmed renewal or acquisition + the lease.
  Deadline lease_deadline() const { return lease_deadline_; }
  // lease_deadline() - the stop lead: the last moment the job may run unstopped.
  Deadline stop_at() const { return lease_deadline_ - stop_lead_; }
  // When tick() must run next: a renewal is due, or the stop point comes.
  Deadline next_due() const { return std::min(next_due_, stop_at()); }
  // Renews if due. kUnreachable means still before the stop point: it will retry. kLost
  // once the stop point has passed without a confirmed renewal (Redis unreachable, or
  // rlock itself was stopped or suspended), or when a renewal says the lock is gone.
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
  Millis renew_interval() const;

  redis::ConnectOptions options_;
  std::optional<redis::Connection> conn_;
  const prim::KeyLayout& layout_;
  std::string name_;
  std::string owner_;
  Millis lease_;
  Deadline lease_deadline_;
  Deadline next_due_;
  Millis stop_lead_{0};
  std::string last_error_;  // of the last failed attempt since the last confirmed renewal
  std::optional<prim::Lock> lock_;
  std::string lost_reason_;
};

}  // namespace rlock::exec
