#include "prim/multi_hold.hpp"

#include <algorithm>
#include <exception>

#include "redis/errors.hpp"
#include "util/error.hpp"

namespace rlock::prim {

MultiHold::MultiHold(std::vector<Member> members, long long fence)
    : Hold(members.front().hold->lease(), fence, members.front().hold->deadline()),
      members_(std::move(members)) {
  update_deadline();
}

void MultiHold::update_deadline() {
  deadline_ = members_.front().hold->deadline();
  for (const auto& m : members_) deadline_ = std::min(deadline_, m.hold->deadline());
}

Hold::Renewed MultiHold::renew() {
  // One member that did not answer must not keep the others from being renewed: their
  // deadlines move on, and the earliest one says how long the whole is certainly ours.
  std::exception_ptr unanswered;
  for (auto& m : members_) {
    m.unanswered = false;
    try {
      if (m.hold->renew() == Renewed::kLost) {
        lost_ = &m;
        reason_ = "lock '" + m.name + "': " + m.hold->lost_reason();
        update_deadline();
        return Renewed::kLost;
      }
    } catch (const Error& e) {
      // A short acknowledgement (--sync-replicas) is an answer: the member's master has
      // the hold, and give_back_rest() gives it back.
      m.unanswered = dynamic_cast<const redis::ReplicationError*>(&e) == nullptr;
      if (!unanswered)
        unanswered =
            std::make_exception_ptr(Error(e.exit_code(), "lock '" + m.name + "': " + e.what()));
    }
  }
  update_deadline();
  if (unanswered) std::rethrow_exception(unanswered);
  return Renewed::kHeld;
}

Hold::Released MultiHold::release(Millis keep) {
  // Every member is given back whatever happens to the others: a member left held would
  // block its lock for a whole lease.
  std::exception_ptr unanswered;
  std::string not_held;
  for (auto m = members_.rbegin(); m != members_.rend(); ++m) {
    try {
      if (m->hold->release(keep) == Released::kNotHeld && not_held.empty())
        not_held = "lock '" + m->name + "': " + m->hold->lost_reason();
    } catch (const Error&) {
      if (!unanswered) unanswered = std::current_exception();
    }
  }
  if (unanswered) std::rethrow_exception(unanswered);
  if (not_held.empty()) return Released::kReleased;
  reason_ = not_held;
  return Released::kNotHeld;
}

void MultiHold::give_back_rest() noexcept {
  for (auto m = members_.rbegin(); m != members_.rend(); ++m) {
    if (&*m == lost_ || (!lost_ && m->unanswered)) continue;
    try {
      m->hold->release(Millis(0));
    } catch (const std::exception&) {  // it expires with its lease
    }
  }
}

void MultiHold::job_ended(int exit_code) {
  for (auto& m : members_) m.hold->job_ended(exit_code);
}

void MultiHold::job_not_started() {
  for (auto& m : members_) m.hold->job_not_started();
}

std::vector<std::string> MultiHold::watch_channels() const {
  std::vector<std::string> all;
  for (const Member& m : members_) {
    for (std::string& c : m.hold->watch_channels()) all.push_back(std::move(c));
  }
  return all;
}

}  // namespace rlock::prim
