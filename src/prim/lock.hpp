#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "prim/ancestry.hpp"
#include "prim/hold.hpp"
#include "prim/key_layout.hpp"
#include "prim/wait.hpp"
#include "redis/errors.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::prim {

class RedissonFairLock;

struct Holder {
  std::string owner;
  long long count = 0;  // reentry depth; 0 = kept only by --min-hold
  std::string note;     // what the hold said of itself (--note): force_release only
};

// Who takes a lock. A `lock` hold re-enters any hold of its owner; an `exec` hold is
// exclusive even against its own owner (two concurrent execs never both run, whatever
// RLOCK_OWNER says) and re-enters only a hold that owner took with `lock`.
enum class HoldKind { kLock, kExec };

// Exclusive (a writer: the plain lock) or shared (a reader: any number at once, no writer;
// flock -s). Each shared hold has its own lease.
enum class LockMode { kExclusive, kShared };

// The lock is ours.
struct Held {
  long long count = 0;  // reentry depth after this call
  long long fence = 0;  // token of the current hold
  Millis lease{0};      // the lock's lease now in force (a re-entry never shortens it)
  bool fresh = false;   // a new hold (new token), not a re-entry
  std::string hold_id;  // identifies this hold for renew/release (exec holds)
  LockMode mode = LockMode::kExclusive;
  Deadline deadline{};  // the server may expire it from here on: request send time + lease
  long long replicas_acked = -1;  // replicas that acknowledged it (--sync-replicas); -1 = off
  // On a quorum: what is left of the lease once the majority answered, minus the drift
  // (RedLock's validity); -1 elsewhere.
  Millis validity{-1};
};

// Somebody else has it.
struct Busy {
  std::vector<Holder> holders;   // the writer and some of the readers (a bounded list)
  long long holders_total = 0;   // how many holders there are in all
  Millis ttl{0};                 // holders' remaining lease; -1 = no expiry
  bool same_owner_exec = false;  // held by another `rlock exec` of this very owner
  bool interrupted = false;      // the wait was ended by a signal
  // The wait was superseded by a newer --supersede request of this owner (QueuePolicy): it
  // left the queue and takes nothing. Empty: it was not.
  std::string superseded_by;
};

// How a wait queues (rlock --supersede, --cancel-running, --priority). Plain waits: all off.
struct QueuePolicy {
  // Higher first; arrival order within a level. 0 (plain waiters) to kMaxPriority.
  int priority = 0;
  // A newer supersede wait takes the older queued supersede wait out of the queue (it ends,
  // Busy::superseded_by); plain waiters keep their places.
  bool supersede = false;
  // With supersede: the running exec hold taken with supersede is cancelled too (its
  // renewal says so; it is released once its job is dead).
  bool cancel_running = false;
};
inline constexpr int kMaxPriority = 99;

using Acquisition = std::variant<Held, Busy>;

struct Release {
  enum class Outcome {
    kReleased,    // one level dropped (remaining = levels left; 0 = released, kept or handed over)
    kNotHeld,     // the owner holds no level: holders says who does (empty = free)
    kExecRunning  // refused: the last level belongs to a running `rlock exec`
  };
  Outcome outcome = Outcome::kNotHeld;
  long long remaining = 0;
  std::vector<Holder> holders;
};

// A request that could only be granted once a hold of the processes it runs under is
// released (SELF), or a shared holder asking for the exclusive lock (UPGRADE): it would
// wait for itself, so it is refused at once (exit 65) and nothing changed. A pool skips
// such a member and waits for the others.
struct WaitsForItself : DataError {
  using DataError::DataError;
};

// A waiter must confirm a grant within this time, or the lock passes to the next waiter:
// a stopped or cut-off waiter delays the queue by at most this much.
inline constexpr Millis kClaimWindow{2000};

// One acquisition request of a Lock as a Waitable of its own, for a wait that is made of
// several (prim::Pool): what Lock::acquire waits with. result() is what its last attempt
// found: Held once an attempt acquired.
class LockWaiter : public Waitable {
 public:
  virtual Acquisition result() const = 0;
};

class RedissonRwLock;

// A reentrant lock with a lease, owned per owner id (Redisson's RLock layout: one hash
// owner -> count), a fencing token that never goes backwards, and a strict FIFO queue of
// waiters that a release hands the lock to. Every operation is one script.
class Lock {
 public:
  // Throws UsageError for a name the layout cannot place (KeyLayout::check_name).
  Lock(redis::Topology& topology, const KeyLayout& layout, std::string name);

  // One attempt: acquire, re-enter, or report the holders (never ahead of a live waiter).
  Acquisition try_acquire(const std::string& owner, Millis lease, HoldKind kind = HoldKind::kLock,
                          LockMode mode = LockMode::kExclusive);

  // Tries until `until`, queued and sleeping on pub/sub in between (see wait_for). Never
  // returns Held when interrupted.
  // A reader asking for the exclusive lock while it holds it shared would wait for itself:
  // that throws DataError at once, whatever `until` says, and changes nothing. So does a
  // request that could only be granted once a hold of `ancestry` (set_ancestry) is released.
  Acquisition acquire(const std::string& owner, Millis lease, Deadline until,
                      const WaitHooks& hooks = {}, HoldKind kind = HoldKind::kLock,
                      LockMode mode = LockMode::kExclusive);

  // A request of `owner` for this lock whose wait id (grant channel, request record) is
  // `wait_id`, for a wait that attempts several locks (prim::Pool). Lock::acquire's
  // refusals (SELF, UPGRADE) come out of its attempts as redis::ReplyError.
  std::unique_ptr<LockWaiter> waiter(const std::string& owner, Millis lease, HoldKind kind,
                                     LockMode mode, const std::string& wait_id);

  // Releases one level held by `owner`; an exec hold is named by its `hold_id`. At level 0
  // the lock goes to the head waiter, or with `keep` > 0 stays held (count 0) that long.
  // `run_end` (see prim/run_history.hpp): the end of an exec --once-per run that the
  // release records in the name's run history in the same script ("" for none).
  Release release(const std::string& owner, Millis keep = Millis(0),
                  const std::string& hold_id = "", LockMode mode = LockMode::kExclusive,
                  const std::string& run_end = "");

  // Gives back the hold `held` that an acquisition of `kind` took (one level of a `lock`
  // hold), when what it was taken with failed: on the command connection within what is
  // left of the failed request's budget, else on a connection of its own (see clean_up).
  // A repeat after a lost reply changes nothing. Never throws.
  void give_back(const std::string& owner, const Held& held, HoldKind kind) noexcept;

  // Releases whoever holds it, passing it to the head waiter; returns who held it, the
  // exclusive holder with its note.
  std::vector<Holder> force_release();

  // Extends the lease iff `owner` (and, for an exec hold, `hold_id`) still holds it; never
  // shortens it. Returns the lock's remaining lease, or 0 when the hold is gone, or -1 when
  // a --cancel-running request cancelled it (not extended; held until released or its
  // lease ends). A renewal
  // that --sync-replicas replicas did not acknowledge throws ReplicationError: it must not
  // count (a failover to a replica that missed it expires the hold at the old deadline).
  Millis renew(const std::string& owner, Millis lease, const std::string& hold_id = "",
               LockMode mode = LockMode::kExclusive);

  // The hold of an acquisition of `kind`, for exec's supervision (or a MultiLock's renewals
  // while it waits for its next lock).
  std::unique_ptr<Hold> hold(const std::string& owner, Millis lease, const Held& held,
                             HoldKind kind = HoldKind::kExec);

  // The holds of the rlock processes the caller runs under (see AncestorHold), checked by
  // every acquisition from now on.
  void set_ancestry(std::vector<AncestorHold> holds);

  // What every acquisition from now on says of itself (--note: checked by validate_note),
  // kept with its hold and, while it waits, with its queue entry; "" for none. A re-entry
  // keeps the note of the first hold.
  void set_note(std::string note) { note_ = std::move(note); }
  // The queue policy of every wait from now on.
  void set_queue_policy(const QueuePolicy& policy) { policy_ = policy; }
  // The exec --once-per run `run_id` (prim::RunHistory) that the holds this lock hands out
  // from now on run: their release records its end (the job's exit status, or "lost").
  void set_run(std::string run_id) { run_id_ = std::move(run_id); }
  const std::string& run_id() const { return run_id_; }

  const std::string& name() const { return name_; }

 private:
  friend class LockWait;
  friend Acquisition wait_for_lock(Lock&, const std::string&, Millis, Deadline, const WaitHooks&,
                                   HoldKind, LockMode);
  // Throws UsageError when the layout has no shared holds.
  void refuse_shared() const;
  // The error for a request refused because it would wait for `what` ("exclusive",
  // "shared" or "behind") hold `id` of the ancestry.
  WaitsForItself waits_for_itself(const std::string& what, const std::string& id) const;
  // Throws WaitsForItself for lock_acquire's SELF and UPGRADE refusals (`owner`: the
  // requester); rethrows anything else. Only from a catch block.
  [[noreturn]] void throw_refusal(const redis::ReplyError& e, const std::string& owner) const;
  friend class LockHold;
  // KEYS of the lock script `Contract` (lua/include/lock_common.lua's, then a reply record
  // `reply_key` (see KeyLayout::reply_key) and the run history `runs_key` where it takes
  // them).
  template <class Contract>
  std::vector<std::string_view> keys(const std::string& request_key,
                                     const std::string& reply_key = {},
                                     const std::string& runs_key = {}) const;

  redis::Topology& topology_;
  const KeyLayout& layout_;
  std::string name_;
  std::string key_, fence_key_, waiters_key_, timeouts_key_, grant_key_, exec_key_, readers_key_,
      reader_grants_key_, reader_expiries_key_, notes_key_, policy_key_, superseded_key_;
  std::string sem_key_;  // a semaphore of the same name: the lock scripts refuse to act on it
  std::string channel_;
  std::string foreign_channel_;  // KeyLayout::foreign_lock_channel: "" for none
  std::vector<AncestorHold> ancestry_;
  std::string note_;
  QueuePolicy policy_;
  std::string runs_key_;  // the run history (KeyLayout::runs_key)
  std::string run_id_;    // set_run: "" for none
  // Redisson's RReadWriteLock (KeyLayout::read_write_lock), which every operation goes to.
  std::shared_ptr<RedissonRwLock> rw_;
  // Under RedissonFairLayout every operation is the fair lock's (prim/redisson_fair_lock).
  std::shared_ptr<RedissonFairLock> fair_;
};

// Decodes a flat owner, count, owner, count, ... list read from the lock hash `key`.
// Throws DataError naming the key when a value is not a count (a hash that is no lock).
std::vector<Holder> decode_holders(const redis::ReplyView& r, size_t first, const std::string& key);

// The kind a hold or wait is recorded as by the lock scripts: lock, exec, slock, sexec.
const char* kind_name(HoldKind k, LockMode m);

// The wait of one request on `lock` in rlock's own layout (prim/lock_wait.cpp).
std::unique_ptr<LockWaiter> make_lock_wait(Lock& lock, const std::string& owner, Millis lease,
                                           HoldKind kind, LockMode mode,
                                           const std::string& wait_id);
// Lock::acquire's wait in rlock's own layout, through the shared wait loop.
Acquisition wait_for_lock(Lock& lock, const std::string& owner, Millis lease, Deadline until,
                          const WaitHooks& hooks, HoldKind kind, LockMode mode);

}  // namespace rlock::prim
