#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "prim/ancestry.hpp"
#include "prim/hold.hpp"
#include "prim/key_layout.hpp"
#include "prim/wait.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::prim {

class RedissonSemaphore;

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
  std::vector<std::string> ids;   // "<request id>.<i>", one per permit
  Millis lease{0};                // lease left on them
  std::string request_id;         // names the acquisition for its hold
  Deadline deadline{};            // the server may expire them from here on
  long long replicas_acked = -1;  // replicas that acknowledged them (--sync-replicas); -1 = off
  long long count = 0;            // Redisson's RSemaphore: anonymous permits taken (no ids)
};

// Not enough permits free (or live waiters ahead).
struct PermitsBusy {
  long long in_use = 0;
  long long capacity = 0;
  Millis next_expiry{-1};    // until the first permit or reservation runs out; -1 = none
  bool interrupted = false;  // the wait was ended by a signal
};

using PermitAcquisition = std::variant<PermitsHeld, PermitsBusy>;

// What a permit wait that ended with `outcome` reports: `a`, or busy and interrupted when a
// signal ended it (whatever the last attempt saw).
PermitAcquisition permit_outcome(WaitOutcome outcome, PermitAcquisition a);

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

// Which part of a semaphore's lists read_semaphore reads: the permits from rank
// `permits_from` (by lease expiry, live ones only) and the waiters from rank `waiters_from`
// (queue order), at most `limit` of each (-1: none of that list). A server's work and
// reply are bounded by `limit`, whatever the semaphore's size.
struct SemaphorePage {
  long long permits_from = 0;
  long long waiters_from = 0;
  long long limit = 1000;
};

// A semaphore as it is now (plain data for status and inspect): totals, and the page asked for.
struct SemaphoreState {
  long long capacity = 0;             // 0: no such semaphore
  long long permits_total = 0;        // live permits in use
  long long reserved = 0;             // permits reserved for granted waiters, not claimed yet
  long long waiters_total = 0;        // live waits queued (granted ones not included)
  Millis last_lease{-1};              // lease left on the permit that ends last; -1: none
  std::vector<PermitInfo> permits;    // the page's permits, by lease expiry
  std::vector<PermitWaiter> waiters;  // granted ones first (first page only), then queued
  long long next_permits_from = -1;   // the next page's permits_from; -1: all read
  long long next_waiters_from = -1;   // the next page's waiters_from; -1: all read
};

// Reads one page of semaphore `name` in one round trip, without changing it; expired
// permits are left out. Throws DataError when its keys hold other types or a value read
// back is not a number rlock could have stored.
SemaphoreState read_semaphore(redis::Topology& topology, const KeyLayout& layout,
                              const std::string& name, const SemaphorePage& page = {});

// The keys of semaphore `name` as lua/sem_status.lua takes them (its request record is "-":
// unused by reads).
std::vector<std::string> semaphore_keys(const KeyLayout& layout, const std::string& name);

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
  // expired or was released); returns the ids not held (empty: renewed). A renewal that
  // --sync-replicas replicas did not acknowledge throws ReplicationError.
  std::vector<std::string> renew(const std::vector<std::string>& ids, Millis lease);

  // The permits of an acquisition as one hold, for exec's supervision.
  std::unique_ptr<Hold> hold(const PermitsHeld& held, Millis lease);

  // The holds of the rlock processes the caller runs under (see AncestorHold): from now on,
  // an acquisition that could only be granted once their permits are released throws
  // DataError at once, whatever its wait, and changes nothing.
  void set_ancestry(std::vector<AncestorHold> holds) { ancestry_ = std::move(holds); }

  // What every acquisition from now on says of itself (--note, checked by validate_note):
  // kept with each permit it takes, and with its queue entry while it waits; "" for none.
  void set_note(std::string note) { note_ = std::move(note); }

  const std::string& name() const { return name_; }

  // From now on every operation is Redisson's RPermitExpirableSemaphore's of the name
  // (--layout redisson; prim/redisson_semaphore), or its RSemaphore's when `plain`. Throws
  // UsageError for a name Redisson's layout refuses.
  void use_redisson(bool plain = false);

 private:
  friend class PermitWait;
  friend class PermitHold;
  // KEYS of the semaphore script `Contract` (lua/include/sem_common.lua's, then a reply
  // record `reply_key` (see KeyLayout::reply_key) where it takes one and it is not empty).
  template <class Contract>
  std::vector<std::string_view> keys(const std::string& request_key,
                                     const std::string& reply_key = {}) const;
  // A release in `mode` (lua/sem_release.lua) of `values`, recorded under a reply key of its
  // own: repeated when its reply is lost, it reports what the first run did.
  redis::Reply release_script(const std::string& request_key, std::string_view mode, Millis keep,
                              const std::vector<std::string>& values);
  // The DataError for a request of `count` permits refused with `reply` (error "SELF ...").
  DataError waits_for_itself(const std::string& reply, long long count) const;

  redis::Topology& topology_;
  const KeyLayout& layout_;
  std::string name_;
  std::string key_, config_key_, holders_key_, waiters_key_, timeouts_key_, grants_key_, lock_key_,
      lock_readers_key_, notes_key_, channel_;
  std::vector<AncestorHold> ancestry_;
  std::string note_;
  std::shared_ptr<RedissonSemaphore> redisson_;
};

}  // namespace rlock::prim
