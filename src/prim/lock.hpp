#pragma once

#include <functional>
#include <string>
#include <vector>

#include "prim/key_layout.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

struct Holder {
  std::string owner;
  long long count = 0;  // reentry depth; 0 = kept only by --min-hold
};

// Outcome of one acquisition attempt. "Not acquired" is a result, not an exception.
struct Acquisition {
  bool acquired = false;
  bool interrupted = false;  // the wait was cut short by the interrupt fd
  long long count = 0;       // acquired: reentry depth after this call
  long long fence = 0;       // acquired: token of the current hold
  Millis lease{0};           // acquired: lease granted
  std::vector<Holder> holders;  // busy: who holds it
  Millis ttl{0};                // busy: holders' remaining lease; -1 = no expiry
  Deadline sent_at{};           // acquired: the lease runs from no earlier than this
  Deadline known_at{};          // acquired: when this process learned it holds the lock
};

struct Release {
  bool held = false;            // the owner held the lock
  long long remaining = 0;      // held: reentry depth left (0 = released or kept)
  std::vector<Holder> holders;  // not held: who holds it instead (empty = free)
};

// Optional collaborators of a blocking acquisition.
struct WaitHooks {
  int interrupt_fd = -1;  // readable -> stop waiting (signals)
  // Called before each sleep with the current holders and the time left to wait.
  std::function<void(const Acquisition& busy, Millis wait_left)> on_wait;
};

// A reentrant lock with a lease, owned per owner id (Redisson's RLock layout): one hash
// owner -> count, a fencing token that never goes backwards, releases published so that
// waiters sleep on pub/sub instead of polling.
class Lock {
 public:
  Lock(redis::Connection& conn, const KeyLayout& layout, std::string name);

  // One attempt: acquire, re-enter (count + 1, lease extended) or report the holders.
  Acquisition try_acquire(const std::string& owner, Millis lease);

  // Tries until `until`. Meanwhile it is queued as a waiter and sleeps on pub/sub (its own
  // connection): a release hands the lock straight to the longest-waiting live waiter on
  // that waiter's grant channel, with no second round trip; without a release it retries
  // when the holder's lease runs out. Never returns acquired when interrupted (a hold
  // granted at that moment is released again).
  Acquisition acquire(const std::string& owner, Millis lease, Deadline until,
                      const WaitHooks& hooks = {});

  // Releases one level held by `owner`. At level 0 deletes and publishes, or with
  // `keep` > 0 leaves the lock held (count 0) for `keep` more.
  Release release(const std::string& owner, Millis keep = Millis(0));

  // Releases whoever holds it; returns who did (empty if it was free).
  std::vector<Holder> force_release();

  // Extends the lease iff `owner` still holds the lock; false = the lock was lost.
  bool renew(const std::string& owner, Millis lease);

  const std::string& name() const { return name_; }

 private:

  // `mode`: "try", "wait" or "queued" (see lua/lock_acquire.lua).
  Acquisition attempt(const std::string& owner, Millis lease, const char* mode, Millis wait_left,
                      const std::string& wait_id);
  // Leaves the queue; `busy` is returned unless a grant arrived just before.
  Acquisition cancel_wait(const std::string& owner, Millis lease, const std::string& wait_id,
                          Acquisition busy);

  redis::Connection& conn_;
  const KeyLayout& layout_;
  std::string name_;
  std::string key_;
  std::string fence_key_;
  std::string waiters_key_;
  std::string channel_;
};

// Decodes a flat owner, count, owner, count, ... list read from the lock hash `key`.
// Throws DataError naming the key when a value is not a count (a hash that is no lock).
std::vector<Holder> decode_holders(const struct redisReply* r, size_t first, const std::string& key);

}  // namespace rlock::prim
