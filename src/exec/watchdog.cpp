#include "exec/watchdog.hpp"

#include <algorithm>

#include "util/error.hpp"

namespace rlock::exec {
namespace {

// While Redis is unreachable, retry this often (but never past the lease deadline).
constexpr Millis kRetryInterval{250};
// A renewal gets at least this long to answer (or lease/3 if shorter), even close to the
// deadline: a too-short timeout turns a little latency into a lost lock.
constexpr Millis kRenewalTimeoutFloor{500};

}  // namespace

Watchdog::Watchdog(std::unique_ptr<prim::Hold> hold, redis::Topology& topology)
    : hold_(std::move(hold)),
      topology_(topology),
      next_due_(hold_->deadline() - hold_->lease() * 2 / 3) {}

Watchdog::State Watchdog::tick() {
  Deadline now = SteadyClock::now();
  if (now < next_due_) return State::kHeld;
  Millis floor = std::min(kRenewalTimeoutFloor, hold_->lease() / 3);
  topology_.limit_timeout(std::max(millis_until(hold_->deadline()), std::max(floor, Millis(1))));
  try {
    if (hold_->renew() == prim::Hold::Renewed::kHeld) {
      next_due_ = now + hold_->lease() / 3;
      return State::kHeld;
    }
    lost_reason_ = hold_->lost_reason();
    return State::kLost;
  } catch (const Error& e) {
    if (SteadyClock::now() >= hold_->deadline()) {
      lost_reason_ = std::string("redis stayed unreachable until the lease ran out: ") + e.what();
      return State::kLost;
    }
    lost_reason_ = e.what();
    next_due_ = std::min(SteadyClock::now() + kRetryInterval, hold_->deadline());
    return State::kUnreachable;
  }
}

Watchdog::Released Watchdog::release(Millis keep, std::string* why) {
  topology_.limit_timeout(Millis(0));
  try {
    if (hold_->release(keep) == prim::Hold::Released::kReleased) return Released::kReleased;
    if (why) *why = hold_->lost_reason();
    return Released::kNotHeld;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return Released::kUnreachable;
  }
}

}  // namespace rlock::exec
