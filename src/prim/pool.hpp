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
//
// K of them (count > 1) are taken one at a time in one canonical order (the names sorted
// bytewise), each a wait as above for any member after the last one taken that leaves
// enough members behind it; the members taken are kept, renewed, while the next is
// waited for. A waiter only ever waits for members after all those it holds, so waiters
// cannot wait for each other in a circle (two K=2 waiters on a 3-pool never each hold one
// and wait for the other's). The price: a waiter that holds `b` waits for `c` even when
// `a` is free, and keeps `b` from everyone meanwhile.
class Pool {
 public:
  // `names`: distinct, valid names, in the order the user gave them; 1 <= `count` <=
  // names.size().
  Pool(redis::Topology& topology, const KeyLayout& layout, std::vector<std::string> names,
       size_t count = 1);
  // Leaves the queues the last acquisition left for later (see Pending), if it has not yet.
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Takes `count` members, waiting until `until` (see Lock::acquire). Acquired: `taken` are
  // the members (in the order taken) and `hold` keeps them all. Refused: `name` is the
  // first member waited for last and `busy` the holders of the members waited for (ttl:
  // the soonest expiry). Nothing stays held or queued on busy, a signal or an error; a
  // member kept while the next is waited for and lost (forced, or run out with Redis
  // unreachable) gives everything back and the whole starts again while `until` allows.
  // Throws what Lock::acquire throws.
  MultiLock::Outcome acquire(const std::string& owner, Millis lease, Deadline until,
                             const WaitHooks& hooks, HoldKind kind = HoldKind::kLock,
                             LockMode mode = LockMode::kExclusive);

  // Gives back the members of `taken` (see Lock::give_back). Never throws.
  void give_back(const std::string& owner, const std::vector<MultiLock::Taken>& taken,
                 HoldKind kind) noexcept;

  // See Lock::set_ancestry; for every member.
  void set_ancestry(const std::vector<AncestorHold>& holds);
  // See Lock::set_note; for every member (whichever is taken says it).
  void set_note(const std::string& note);

  const std::vector<std::string>& names() const { return names_; }

 private:
  struct Kept {
    size_t index;  // into names_ and locks_
    Held held;
    std::unique_ptr<Hold> hold;
  };
  struct Stage {
    WaitOutcome outcome = WaitOutcome::kTimedOut;
    size_t index = 0;  // acquired: the member taken
    Held held;
    Busy busy;  // not acquired
  };
  // The requests of the members the last member's wait did not take: given up once the
  // job started (Topology::after_start, which holds on to this) or when the Pool ends,
  // whichever comes first.
  struct Pending {
    std::vector<std::unique_ptr<LockWaiter>> parts;
    void leave() noexcept;
  };
  // One wait for any one of `eligible` (indices into locks_); `last_stage`: the last
  // member to take.
  Stage take_one(const std::vector<size_t>& eligible, bool last_stage, const std::string& owner,
                 Millis lease, Deadline until, const WaitHooks& hooks, HoldKind kind,
                 LockMode mode);
  // Renews every member kept; false when one is lost (dropped from `kept`: no longer ours)
  // or was not confirmed by its deadline.
  static bool renew_kept(std::vector<Kept>& kept);
  void give_back(const std::string& owner, const std::vector<Kept>& kept, HoldKind kind) noexcept;
  MultiLock::Outcome acquired(std::vector<Kept> kept);
  size_t position(size_t index) const;  // of locks_[index] in order_

  redis::Topology& topology_;
  std::vector<std::string> names_;
  size_t count_;
  std::vector<std::unique_ptr<Lock>> locks_;  // as names_; a Hold refers to its Lock
  std::vector<size_t> order_;                 // indices into locks_, the order they are tried
  std::shared_ptr<Pending> pending_ = std::make_shared<Pending>();
};

}  // namespace rlock::prim
