#include "prim/lock.hpp"
#include "prim/run_history.hpp"

namespace rlock::prim {

// A lock hold under exec's supervision.
class LockHold : public Hold {
 public:
  LockHold(Lock& lock, std::string owner, Millis lease, const Held& held)
      : Hold(lease, held.fence, held.deadline),
        lock_(lock),
        owner_(std::move(owner)),
        hold_id_(held.hold_id),
        mode_(held.mode) {}

  Renewed renew() override {
    Deadline sent = SteadyClock::now();
    const Millis left = lock_.renew(owner_, lease_, hold_id_, mode_);
    if (left.count() > 0) {
      deadline_ = sent + lease_ - lock_.topology_.drift(lease_);
      return Renewed::kHeld;
    }
    cancelled_ = left.count() < 0;
    reason_ = cancelled_
                  ? "the hold was cancelled by a newer --supersede --cancel-running request"
                  : "the lock is no longer held by " + owner_ + " (expired, deleted or forced)";
    return Renewed::kLost;
  }

  // A cancelled hold is still ours (it was not renewed): once the job is dead it goes at
  // once to the newest waiter, not at the end of its lease.
  void give_back_rest() noexcept override {
    if (!cancelled_) return;
    try {
      lock_.release(owner_, Millis(0), hold_id_, mode_);
    } catch (const std::exception&) {  // it expires with its lease
    }
  }

  bool cancelled() const override { return cancelled_; }

  void job_ended(int exit_code) override { exit_code_ = exit_code; }

  Released release(Millis keep) override {
    // A run's end is that of the job: a hold given back with no job ended records none.
    const std::string run_end = lock_.run_id_.empty() || exit_code_ < 0
                                    ? std::string()
                                    : run_end_arg(lock_.run_id_, "exited", exit_code_);
    auto r = lock_.release(owner_, keep, hold_id_, mode_, run_end);
    if (r.outcome == Release::Outcome::kReleased) return Released::kReleased;
    reason_ = "it was no longer held by " + owner_ + " (held by " +
              std::to_string(r.holders.size()) + " other owner(s))";
    return Released::kNotHeld;
  }

  std::vector<std::string> watch_channels() const override {
    return {lock_.layout_.holder_channel(lock_.name_)};
  }

  std::string lost_reason() const override { return reason_; }

 private:
  Lock& lock_;
  std::string owner_;
  std::string hold_id_;
  LockMode mode_;
  std::string reason_;
  bool cancelled_ = false;
  int exit_code_ = -1;  // job_ended's; -1 until then
};

std::unique_ptr<Hold> Lock::hold(const std::string& owner, Millis lease, const Held& held,
                                 HoldKind kind) {
  if (kind == HoldKind::kExec) return std::make_unique<LockHold>(*this, owner, lease, held);
  // A `lock` hold is its owner's, renewed and released by owner alone.
  Held owners = held;
  owners.hold_id.clear();
  return std::make_unique<LockHold>(*this, owner, lease, owners);
}

}  // namespace rlock::prim
