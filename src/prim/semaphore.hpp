#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "prim/hold.hpp"
#include "prim/key_layout.hpp"
#include "prim/wait.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

// What an acquisition asks for.
struct PermitRequest {
  std::string owner;
  long long capacity = 1;  // --permits: must equal the stored capacity unless resize
  long long count = 1;     // permits to take at once, 1..capacity
  Millis lease{30'000};
  bool resize = false;  // store `capacity` as the semaphore's capacity
};

// The permits are ours.
struct PermitsHeld {
  std::vector<std::string> ids;  // "<request id>.<i>", one per permit
  Millis lease{0};               // lease left on them
  std::string request_id;        // names the acquisition for its hold
  Deadline deadline{};           // the server may expire them from here on
};

// Not enough permits free (or live waiters ahead).
struct PermitsBusy {
  long long in_use = 0;
  long long capacity = 0;
  Millis next_expiry{-1};    // until the first permit or reservation runs out; -1 = none
  bool interrupted = false;  // the wait was ended by a signal
};

using PermitAcquisition = std::variant<PermitsHeld, PermitsBusy>;

struct PermitRelease {
  long long released = 0;             // permits freed by this call (each credited once)
  std::vector<std::string> not_held;  // ids given that were not held: expired, released, forged
};

// One permit in use, for status and inspect.
struct PermitInfo {
  std::string id;
  std::string owner;
  Millis lease_left{0};
};

// One queued request, in queue order.
struct PermitWaiter {
  std::string owner;
  long long count = 0;
  Millis waited{0};
  bool granted = false;  // permits reserved for it, not claimed yet
};

// A semaphore as it is now (plain data for status and inspect).
struct SemaphoreState {
  long long capacity = 0;  // 0: no such semaphore
  std::vector<PermitInfo> permits;
  std::vector<PermitWaiter> waiters;
};

// Reads semaphore `name` in one round trip, without changing it; expired permits are left
// out. Throws DataError when its keys hold other types.
SemaphoreState read_semaphore(redis::Topology& topology, const KeyLayout& layout,
                              const std::string& name);

// A counting semaphore whose permits each have a lease on the server clock (a crashed
// holder's permits come back by themselves), a stored capacity, and the lock's strict FIFO
// queue: freed permits are reserved for the head waiters whose whole request fits, which
// claim them. Every operation is one script.
class Semaphore {
 public:
  Semaphore(redis::Topology& topology, const KeyLayout& layout, std::string name);

  // Takes req.count permits, waiting until `until` queued on pub/sub (see wait_for). Throws
  // DataError when the stored capacity differs from req.capacity (unless req.resize) or the
  // keys hold other types. Never returns PermitsHeld when interrupted.
  PermitAcquisition acquire(const PermitRequest& req, Deadline until, const WaitHooks& hooks = {});

  // Frees the permits `ids` still held and hands freed permits to the head waiters.
  PermitRelease release(const std::vector<std::string>& ids);

  // Frees every permit; returns them with their holders.
  std::vector<PermitInfo> force_release();

  // Extends the leases of all `ids` iff all are still held (never re-acquires one that
  // expired or was released); returns the ids not held (empty: renewed).
  std::vector<std::string> renew(const std::vector<std::string>& ids, Millis lease);

  // The permits of an acquisition as one hold, for exec's supervision.
  std::unique_ptr<Hold> hold(const PermitsHeld& held, Millis lease);

  const std::string& name() const { return name_; }

 private:
  friend class PermitWait;
  friend class PermitHold;
  // KEYS of the scripts; `reply_key` (see KeyLayout::reply_key) only when not empty.
  std::vector<std::string_view> keys(const std::string& request_key,
                                     const std::string& reply_key = {}) const;
  // A release, recorded under a reply key of its own: repeated when its reply is lost,
  // it reports what the first run did.
  redis::Reply release_script(const std::string& request_key, std::vector<std::string> args);

  redis::Topology& topology_;
  const KeyLayout& layout_;
  std::string name_;
  std::string key_, config_key_, holders_key_, waiters_key_, timeouts_key_, grants_key_, lock_key_,
      channel_;
};

}  // namespace rlock::prim
