#pragma once

#include <memory>
#include <string>
#include <vector>

#include "prim/lock.hpp"
#include "prim/multi_lock.hpp"
#include "prim/wait.hpp"

namespace rlock::prim {

// A pool: any one of several locks (Jenkins' lockable resources with a label), whichever is
// free first. Each member is a Lock of its own (its keys, queue and hash tag), and a member
// held directly (`rlock exec B`) is busy for the pool too.
//
// A waiter of the pool queues in every member's queue under one wait id and listens on
// every member's grant channel (one wait_for, one subscription). Each member's queue is
// FIFO, so a direct taker of one member that comes later queues behind the pool's waiter,
// and a release of any member hands it to the longest-waiting of that member's waiters:
// the pool's waiters in arrival order, where they queued on one server (in a cluster each
// member's queue is on its own node: arrival order holds per member, across members only
// as closely as the waiters' queueing round trips). Granted one member, the waiter claims
// it and leaves the other members' queues (lua/lock_abandon.lua), giving back a grant
// received there meanwhile, which goes to that member's next waiter at once.
class Pool {
 public:
  // `names`: distinct, valid names, in the order the user gave them.
  Pool(redis::Topology& topology, const KeyLayout& layout, std::vector<std::string> names);

  // Takes one member, waiting until `until` (see Lock::acquire). Acquired: `taken` is the
  // member and its hold. Refused: `name` is the first member and `busy` every member's
  // holders (ttl: the soonest expiry). Nothing stays held or queued on busy, a signal or an
  // error. Throws what Lock::acquire throws.
  MultiLock::Outcome acquire(const std::string& owner, Millis lease, Deadline until,
                             const WaitHooks& hooks, HoldKind kind = HoldKind::kLock,
                             LockMode mode = LockMode::kExclusive);

  // Gives back the members of `taken` (see Lock::give_back). Never throws.
  void give_back(const std::string& owner, const std::vector<MultiLock::Taken>& taken,
                 HoldKind kind) noexcept;

  // See Lock::set_ancestry; for every member.
  void set_ancestry(const std::vector<AncestorHold>& holds);

  const std::vector<std::string>& names() const { return names_; }

 private:
  redis::Topology& topology_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Lock>> locks_;  // as names_; a Hold refers to its Lock
};

}  // namespace rlock::prim
