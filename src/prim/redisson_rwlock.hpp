#pragma once

#include <memory>
#include <string>
#include <vector>

#include "prim/lock.hpp"

namespace rlock::prim {

// Redisson's RReadWriteLock under `--layout redisson --redisson-object read-write-lock`
// (KeyLayout::read_write_lock), byte for byte: the hash under the bare name with `mode`,
// readers' "<UUID>:<thread>" -> count with a lease key "{NAME}:<field>:rwlock_timeout:<n>"
// per read hold, the writer's "<UUID>:<thread>:write" -> count, PEXPIRE leases as
// Redisson's renewals set them, and Redisson's messages on "redisson_rwlock:{NAME}". A
// Lock on such a layout hands every operation to it. Redisson's lock is not fair: rlock's
// waiters take no place in a queue, and try again on a message or when the lease they
// were told ends. What rlock adds is the fencing token, in its own fence key.
class RedissonRwLock {
 public:
  RedissonRwLock(redis::Topology& topology, const KeyLayout& layout, std::string name);

  // The hash field of `owner`'s hold: an `exec` hold (hold id non-empty) is a thread of
  // its own, so that two execs never share a hold whatever their owner.
  std::string field(const std::string& owner, const std::string& hold_id) const;

  // `wait_id` names the request (and an exec hold's thread); "" for a new one.
  std::unique_ptr<LockWaiter> waiter(const std::string& owner, Millis lease, HoldKind kind,
                                     LockMode mode, const std::string& wait_id = "");
  Acquisition acquire(const std::string& owner, Millis lease, Deadline until,
                      const WaitHooks& hooks, HoldKind kind, LockMode mode);
  // One level of `owner`'s hold (an exec hold: `hold_id`'s).
  Release release(const std::string& owner, const std::string& hold_id, LockMode mode,
                  Millis lease = Millis(0));
  void give_back(const std::string& owner, const Held& held, HoldKind kind) noexcept;
  Millis renew(const std::string& owner, Millis lease, const std::string& hold_id, LockMode mode);
  // Removes a read-write lock and returns who held it; nullopt when the name's hash is no
  // read-write lock (left alone).
  std::optional<std::vector<Holder>> force_release();
  // The exec holds the caller runs under (Lock::set_ancestry): a request that only their
  // release could grant throws WaitsForItself.
  void set_ancestry(std::vector<AncestorHold> holds) { ancestry_ = std::move(holds); }

 private:
  friend class RwWait;
  redis::Topology& topology_;
  const KeyLayout& layout_;
  std::string name_;
  std::string key_, timeouts_, fence_key_, channel_;
  std::vector<AncestorHold> ancestry_;
};

// Redisson's RReadWriteLock channel of `name`: "redisson_rwlock:{NAME}".
std::string redisson_rw_channel(std::string_view name);

}  // namespace rlock::prim
