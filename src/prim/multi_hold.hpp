#pragma once

#include <memory>
#include <string>
#include <vector>

#include "prim/hold.hpp"

namespace rlock::prim {

// Several holds kept as one (a MultiLock's locks): exec supervises it as it supervises a
// single lock, and it counts as lost as soon as one member is.
class MultiHold final : public Hold {
 public:
  struct Member {
    std::string name;  // names the member in lost_reason()
    std::unique_ptr<Hold> hold;
    bool unanswered = false;  // its last renewal got no answer
  };

  // `members` in the order they were taken (they are released in the reverse order), all
  // with the same lease; `fence` is the one fence() reports (a MultiLock's first name as
  // the user gave it).
  MultiHold(std::vector<Member> members, long long fence);

  // Renews every member. kLost as soon as one is lost (lost_reason() names it). When some
  // did not answer, the others are renewed all the same and the first one's error is thrown
  // after them, naming its lock. deadline() is the earliest member's.
  Renewed renew() override;
  // Releases every member, the last taken first, each with `keep`. kNotHeld when one was
  // no longer held (lost_reason() names it); UnavailableError after trying them all when
  // some did not answer (those expire with their lease).
  Released release(Millis keep) override;
  // Releases the members other than the one renew() found lost, or, when the whole was lost
  // for want of answers (the stop point passed), those that answered their last renewal:
  // one that did not (a frozen cluster master) expires with its lease, and asking it would
  // hold up the others.
  void give_back_rest() noexcept override;
  void job_ended(int exit_code) override;
  void job_not_started() override;
  std::vector<std::string> watch_channels() const override;
  std::string lost_reason() const override { return reason_; }

 private:
  void update_deadline();

  std::vector<Member> members_;
  std::string reason_;
  const Member* lost_ = nullptr;  // the member renew() found lost
};

}  // namespace rlock::prim
