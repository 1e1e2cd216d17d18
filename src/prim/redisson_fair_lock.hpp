#pragma once

#include <memory>
#include <string>
#include <vector>

#include "prim/lock.hpp"
#include "prim/redisson_layout.hpp"

namespace rlock::prim {

// Redisson's fairLockWaitTimeout default (Config.setFairLockWaitTimeout): how long a fair
// waiter that stopped asking keeps its place, Redisson's threadWaitTime.
inline constexpr Millis kRedissonFairWait{300000};

// `--layout redisson --redisson-object fair-lock`: names are Redisson's RFairLock. The keys
// of RedissonLayout, and the fair lock's own: its queue and timeouts and the per-waiter
// channels.
class RedissonFairLayout : public RedissonLayout {
 public:
  using RedissonLayout::RedissonLayout;
  // inspect lists a fair lock's waiters from Redisson's timeouts (the queue's order: each
  // timeout is the one before it plus a wait); Lock never reads it (RedissonFairLock does).
  std::string waiters_key(std::string_view name) const override { return timeouts_key_of(name); }
  std::string queue_key(std::string_view name) const;        // redisson_lock_queue:{NAME}
  std::string timeouts_key_of(std::string_view name) const;  // redisson_lock_timeout:{NAME}
  // rlock's exec hold id of a fair lock (PREFIX redisson:{NAME}:fexec).
  std::string fair_exec_key(std::string_view name) const;
  // redisson_unlock_latch:{NAME}:<request id>, Redisson's unlock reply record.
  std::string unlock_latch_key(std::string_view name, std::string_view request_id) const;
};

// An RFairLock, byte for byte with RedissonFairLock.java (Redisson 3.x): the lock hash
// under the bare name, the waiters' fields in redisson_lock_queue:{NAME} with their
// timeouts (epoch ms, on the server's clock here) in redisson_lock_timeout:{NAME}, and a
// release that wakes the head waiter alone on "redisson_lock__channel:{NAME}:<field>".
// rlock's waiters queue there, in one FIFO order with Java's, and wait in wait_for. What
// Lock does for a fair lock's name is done here (Lock hands every operation over).
class RedissonFairLock {
 public:
  RedissonFairLock(redis::Topology& topology, const RedissonFairLayout& layout, std::string name);

  std::unique_ptr<LockWaiter> waiter(const std::string& owner, Millis lease, HoldKind kind,
                                     const std::string& wait_id);
  Acquisition acquire(const std::string& owner, Millis lease, Deadline until,
                      const WaitHooks& hooks, HoldKind kind);
  Release release(const std::string& owner, Millis keep, const std::string& hold_id);
  void give_back(const std::string& owner, const Held& held, HoldKind kind) noexcept;
  std::vector<Holder> force_release();
  Millis renew(const std::string& owner, Millis lease, const std::string& hold_id);
  // See Lock::set_ancestry: a request that only an exec it runs under could free is refused
  // (WaitsForItself).
  void set_ancestry(const std::vector<AncestorHold>& holds);

  // The waiters in queue order with their timeouts (epoch ms), for inspect.
  struct Waiter {
    std::string field;
    long long timeout_ms = 0;
  };
  static std::vector<Waiter> queue(redis::Topology& topology, const RedissonFairLayout& layout,
                                   const std::string& name);

 private:
  friend class FairWait;
  redis::Topology& topology_;
  const RedissonFairLayout& layout_;
  std::string name_;
  std::string lock_key_, queue_key_, timeouts_key_, fence_key_, exec_key_, channel_;
  std::string ancestry_;  // the ancestors' hold ids, each followed by a space
};

}  // namespace rlock::prim
