#include "exec/watchdog.hpp"

#include <algorithm>

#include "exec/stop_policy.hpp"
#include "redis/errors.hpp"
#include "redis/wait_interrupt.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

// While Redis is unreachable, retry this often (but never past the stop point).
constexpr Millis kRetryInterval{250};
// A renewal gets at least this long to answer (or lease/3 if shorter), even close to the
// stop point: a too-short timeout turns a little latency into a lost lock.
constexpr Millis kRenewalTimeoutFloor{500};
// Otherwise it gives up this long before the stop point, so that rlock looks at the job
// before the guardian stops it: a job that ended while the renewal waited for a server that
// does not answer ran under the hold all along, and keeps its own exit status.
constexpr Millis kLookBeforeStop{100};
// Each request of the watch subscription's opening gets this long (or lease/6, or a third
// of the time to the next renewal, if shorter): it comes after the job has started, and
// the job's signals and the renewals wait meanwhile.
constexpr Millis kWatchOpenTimeout{500};
// Below this much time before the next renewal, the opening waits until after it.
constexpr Millis kWatchLeast{10};
// A failed or dropped subscription is opened again this much later.
constexpr Millis kWatchRetry{1000};
// After this many failed attempts to subscribe, the renewals alone watch the hold.
constexpr int kWatchAttempts = 3;
// Messages closer together than this (readers coming and going) make one renewal.
constexpr Millis kWatchSpacing{100};

}  // namespace

Watchdog::Watchdog(std::unique_ptr<prim::Hold> hold, redis::Topology& topology)
    : hold_(std::move(hold)),
      topology_(topology),
      next_due_(hold_->deadline() - hold_->lease() * 2 / 3) {}

void Watchdog::stop_before_deadline(Millis lead) {
  stop_lead_ = lead;
  next_due_ = std::min(next_due_, hold_->deadline() - hold_->lease() + renew_interval());
}

Deadline Watchdog::next_due() const {
  Deadline due = std::min(next_due_, stop_at());
  return wants_watch() ? std::min(due, watch_due_) : due;
}

bool Watchdog::wants_watch() const { return !watch_ && watch_failures_ < kWatchAttempts; }

Millis Watchdog::renew_interval() const { return exec::renew_interval(hold_->lease(), stop_lead_); }

Watchdog::State Watchdog::tick(int job_fd) {
  Deadline now = SteadyClock::now();
  if (now >= stop_at()) {
    lost_reason_ = last_error_.empty()
                       ? "no renewal was confirmed before the job had to be stopped (rlock was "
                         "paused, stopped or suspended)"
                       : unreachable_reason();
    return State::kLost;
  }
  if (now < next_due_) {
    if (wants_watch() && now >= watch_due_) watch(job_fd);
    return State::kHeld;
  }
  Millis floor = std::min(kRenewalTimeoutFloor, hold_->lease() / 3);
  topology_.limit_timeout(
      std::max(millis_until(stop_at()) - kLookBeforeStop, std::max(floor, Millis(1))));
  last_renewal_ = now;
  try {
    redis::WaitInterrupt cut(job_fd);
    const prim::Hold::Renewed renewed = hold_->renew();
    unacknowledged_ = false;
    if (renewed == prim::Hold::Renewed::kHeld) {
      next_due_ = now + renew_interval();
      last_error_.clear();
      return State::kHeld;
    }
    lost_reason_ = hold_->lost_reason();
    return State::kLost;
  } catch (const redis::InterruptedError&) {
    // The job ended: its end is handled first. Should it not be reaped (a tracer holds the
    // zombie), the renewal comes again after a pause, not in a loop.
    next_due_ = std::min(SteadyClock::now() + kRetryInterval, stop_at());
    return State::kHeld;
  } catch (const Error& e) {
    last_error_ = e.what();
    unacknowledged_ = dynamic_cast<const redis::ReplicationError*>(&e) != nullptr;
    if (SteadyClock::now() >= stop_at()) {
      lost_reason_ = unreachable_reason();
      return State::kLost;
    }
    lost_reason_ = e.what();
    next_due_ = std::min(SteadyClock::now() + kRetryInterval, stop_at());
    return State::kUnreachable;
  }
}

bool Watchdog::confirm() {
  Deadline now = SteadyClock::now();
  topology_.limit_timeout(std::max(hold_->lease() - stop_lead_, Millis(1)));
  try {
    if (hold_->renew() != prim::Hold::Renewed::kHeld) {
      lost_reason_ = hold_->lost_reason();
      return false;
    }
  } catch (const Error& e) {
    lost_reason_ = e.what();
    return false;
  }
  next_due_ = now + renew_interval();
  if (SteadyClock::now() < stop_at()) return true;
  lost_reason_ = "the renewal that would have confirmed it came too late as well";
  return false;
}

void Watchdog::watch(int job_fd) {
  const std::vector<std::string> channels = hold_->watch_channels();
  if (channels.empty()) {
    watch_failures_ = kWatchAttempts;
    return;
  }
  // Opening takes up to a few requests (a sentinel's master is checked first): all of
  // them together must leave the next renewal its time.
  const Deadline now = SteadyClock::now();
  const Millis each =
      std::min({kWatchOpenTimeout, hold_->lease() / 6, millis_until(next_due_) / 3});
  if (each < kWatchLeast) {
    watch_due_ = next_due_ + kWatchLeast;
    return;
  }
  topology_.limit_timeout(each);
  try {
    redis::WaitInterrupt cut(job_fd);
    watch_.emplace(topology_.subscribe(channels));
  } catch (const std::exception&) {
    // Also InterruptedError: the job ended, and its end is handled next.
    ++watch_failures_;
    watch_gap_ = true;
    watch_due_ = now + kWatchRetry;
    return;
  }
  if (watch_gap_) next_due_ = std::min(next_due_, last_renewal_ + kWatchSpacing);
  // A message that came in one read with the confirmations is in the client's buffer, not
  // on the socket: no poll of watch_fds() would ever report it.
  hear();
}

std::vector<int> Watchdog::watch_fds() const { return watch_ ? watch_->fds() : std::vector<int>{}; }

void Watchdog::hear() {
  if (!watch_) return;
  bool heard = false;
  try {
    while (watch_->wait(SteadyClock::now()).wake != redis::Subscriber::Wake::kTimeout) heard = true;
  } catch (const std::exception&) {
    // A dropped subscription may be a failover: worth a look at once, and a new one after.
    watch_.reset();
    watch_gap_ = true;
    watch_due_ = SteadyClock::now() + kWatchRetry;
    heard = true;
  }
  if (heard) next_due_ = std::min(next_due_, last_renewal_ + kWatchSpacing);
}

void Watchdog::give_back_rest() noexcept {
  topology_.limit_timeout(Millis(0));
  if (!unacknowledged_) {
    hold_->give_back_rest();
    return;
  }
  // The master answered the last renewal (it extended the hold, or still had it): only
  // the replicas fell short. Left there, the hold would keep the object busy for up to a
  // lease after the job is gone.
  try {
    hold_->release(Millis(0));
  } catch (const std::exception&) {  // it expires with its lease
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
