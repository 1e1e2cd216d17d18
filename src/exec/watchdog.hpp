#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prim/hold.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"

namespace rlock::exec {

// Keeps a hold's lease alive: renews every lease/3 (or sooner, see stop_before_deadline),
// retries while Redis is unreachable, and declares the hold lost when a renewal finds it
// gone or when no renewal was confirmed before the stop point (lease deadline - stop lead;
// the deadline is measured on the boot clock from the send time of the last confirmed
// renewal or acquisition). Works for any primitive's Hold.
class Watchdog {
 public:
  enum class State { kHeld, kLost, kUnreachable };

  Watchdog(std::unique_ptr<prim::Hold> hold, redis::Topology& topology);

  // Stopping the job starts `lead` before the lease deadline (kill-after + margin): from
  // then on the hold counts as lost, and renewal attempts time out by then. Default 0.
  // Renewals then come every min(lease/3, (lease - lead)/2), so that half the time to the
  // stop point is left for a renewal to be answered or retried.
  void stop_before_deadline(Millis lead);
  // The time (boot clock) from which the server may expire the lease: send time of the
  // last confirmed renewal or acquisition + the lease.
  Deadline lease_deadline() const { return hold_->deadline(); }
  Millis lease() const { return hold_->lease(); }
  // lease_deadline() - the stop lead: the last moment the job may run unstopped.
  Deadline stop_at() const { return hold_->deadline() - stop_lead_; }
  // When tick() must run next: a renewal is due, the watch subscription is to be
  // (re)opened, or the stop point comes.
  Deadline next_due() const;
  // Renews if due. kUnreachable means still before the stop point: it will retry. kLost
  // once the stop point has passed without a confirmed renewal (Redis unreachable, or
  // rlock itself was stopped or suspended), or when a renewal says the hold is gone.
  // `job_fd` (the job's pidfd, or -1): its readiness cuts a renewal's wait short, so that
  // a job that ended meanwhile is seen before the stop point; the renewal is due again.
  State tick(int job_fd = -1);
  // Renews at once, for an acquisition whose reply came too late to start the job on it
  // (a stalled server answers late, but the hold's lease started when the server took it):
  // the renewal's send time gives a fresh deadline. True when the hold is confirmed with
  // the job's start still before the stop point; otherwise lost_reason() says why not.
  bool confirm();
  // After a loss: whether the hold was cancelled by a newer request (--cancel-running).
  bool cancelled() const { return hold_->cancelled(); }
  // Why the hold was lost, for the one-line message.
  const std::string& lost_reason() const { return lost_reason_; }
  // Why the last renewal failed ("" once one succeeds).
  const std::string& last_error() const { return last_error_; }
  // The line for a hold lost to renewals that failed up to the stop point.
  std::string unreachable_reason() const {
    return "redis stayed unreachable until the job had to be stopped: " + last_error_;
  }

  // tick() also keeps a subscription to the hold's watch channels
  // (prim::Hold::watch_channels), opened on the first tick (after the job started) within
  // a short bound and cut short by the job's end: a message there brings the next renewal
  // forward (hear()), so that a hold taken away on the server (unlock --force,
  // --cancel-running) stops the job at once. Without the subscription (it failed, or
  // dropped) the periodic renewals find the loss as before; it is opened again a little
  // later, a few times at most, and a renewal follows each reopening at once, for what
  // was said while nobody listened.
  // The sockets to poll beside the job's and the signals'; when one is ready, hear(). They
  // hold nothing already read: tick() takes in what came with the opening, hear() all it read.
  std::vector<int> watch_fds() const;
  // Takes in what the subscription received: a message, or the subscription's loss, makes
  // a renewal due now (at most one per kWatchSpacing).
  void hear();

  // Tells the hold how the job ended, before release() (see prim::Hold::job_ended).
  void job_ended(int exit_code) { hold_->job_ended(exit_code); }
  // Tells the hold that no job ran under it, before release() (see prim::Hold).
  void job_not_started() { hold_->job_not_started(); }

  // After the hold was lost and the job is dead (see prim::Hold::give_back_rest); when
  // the last renewal failed because the replicas did not acknowledge it (--sync-replicas),
  // releases the whole hold, which the master still has.
  void give_back_rest() noexcept;

  enum class Released { kReleased, kNotHeld, kUnreachable };
  // Releases the hold; with `keep` > 0 the object stays busy that much longer. kNotHeld:
  // the hold was lost after the last renewal; kUnreachable: Redis could not be reached and
  // the lease will expire by itself. `why` says more for both.
  Released release(Millis keep, std::string* why);

 private:
  Millis renew_interval() const;
  bool wants_watch() const;
  void watch(int job_fd);

  std::unique_ptr<prim::Hold> hold_;
  redis::Topology& topology_;
  Deadline next_due_;
  Millis stop_lead_{0};
  std::string last_error_;  // of the last failed attempt since the last confirmed renewal
  std::string lost_reason_;
  bool unacknowledged_ = false;  // the last renewal failed for want of replicas' acks
  std::optional<redis::Subscriber> watch_;
  int watch_failures_ = 0;
  Deadline watch_due_{};     // when to open the subscription, while there is none
  bool watch_gap_ = false;   // it failed or dropped since the hold was taken
  Deadline last_renewal_{};  // send time of the last renewal attempt
};

}  // namespace rlock::exec
