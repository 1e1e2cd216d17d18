#include "prim/lock.hpp"

#include <algorithm>

#include "prim/lock_quorum.hpp"
#include "prim/object_script.hpp"
#include "prim/redisson_fair_lock.hpp"
#include "prim/redisson_rwlock.hpp"
#include "prim/run_history.hpp"
#include "redis/errors.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/error.hpp"
#include "util/owner.hpp"
#include "util/yield_to_server.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "lock";
}  // namespace

const char* kind_name(HoldKind k, LockMode m) {
  if (m == LockMode::kShared) return k == HoldKind::kExec ? "sexec" : "slock";
  return k == HoldKind::kExec ? "exec" : "lock";
}

std::vector<Holder> decode_holders(const redis::ReplyView& r, size_t first,
                                   const std::string& key) {
  std::vector<Holder> holders;
  for (size_t i = first; i + 1 < r.size(); i += 2) {
    std::string owner = r.at(i).str();
    try {
      holders.push_back({owner, r.at(i + 1).integer(), {}});
    } catch (const DataError&) {
      throw DataError("key '" + key + "' holds a hash that is not a lock (field '" + owner +
                      "' is not a reentry count); rlock will not overwrite it");
    }
  }
  return holders;
}

Lock::Lock(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      layout_(layout),
      name_(std::move(name)),
      key_(layout.lock_key(name_)),
      fence_key_(layout.fence_key(name_)),
      waiters_key_(layout.waiters_key(name_)),
      timeouts_key_(layout.timeouts_key(name_)),
      grant_key_(layout.grant_key(name_)),
      exec_key_(layout.exec_key(name_)),
      readers_key_(layout.readers_key(name_)),
      reader_grants_key_(layout.reader_grants_key(name_)),
      reader_expiries_key_(layout.reader_expiries_key(name_)),
      notes_key_(layout.notes_key(name_)),
      policy_key_(layout.policy_key(name_)),
      superseded_key_(layout.superseded_key(name_)),
      sem_key_(layout.sem_key(name_)),
      channel_(layout.lock_channel(name_)),
      foreign_channel_(layout.foreign_lock_channel(name_)),
      runs_key_(layout.runs_key(name_)) {
  layout.check_name(name_);
  use_lock_quorum_rules();
  if (layout.read_write_lock()) rw_ = std::make_shared<RedissonRwLock>(topology, layout, name_);
  if (const auto* fair = dynamic_cast<const RedissonFairLayout*>(&layout))
    fair_ = std::make_shared<RedissonFairLock>(topology, *fair, name_);
}

void Lock::set_ancestry(std::vector<AncestorHold> holds) {
  // Compared with the lock hash's fields by the scripts.
  for (auto& h : holds) h.owner = layout_.owner_field(h.owner);
  if (rw_) rw_->set_ancestry(holds);
  if (fair_) fair_->set_ancestry(holds);
  ancestry_ = std::move(holds);
}

template <class Contract>
std::vector<std::string_view> Lock::keys(const std::string& request_key,
                                         const std::string& reply_key,
                                         const std::string& runs_key) const {
  using C = Contract;
  redis::ScriptArgs k = redis::keys_of<C>();
  k.set(C::kKeyLock, key_)
      .set(C::kKeyFence, fence_key_)
      .set(C::kKeyWaiters, waiters_key_)
      .set(C::kKeyTimeouts, timeouts_key_)
      .set(C::kKeyGrant, grant_key_)
      .set(C::kKeyExec, exec_key_)
      .set(C::kKeyRequest, request_key)
      .set(C::kKeyReaders, readers_key_)
      .set(C::kKeyReaderGrants, reader_grants_key_)
      .set(C::kKeySem, sem_key_)
      .set(C::kKeyReaderExpiries, reader_expiries_key_)
      .set(C::kKeyNotes, notes_key_)
      .set(C::kKeyPolicy, policy_key_)
      .set(C::kKeySuperseded, superseded_key_);
  if constexpr (requires { C::kKeyReply; }) {
    if (!reply_key.empty()) k.set(C::kKeyReply, reply_key);
  }
  if constexpr (requires { C::kKeyRuns; }) {
    if (!runs_key.empty()) k.set(C::kKeyRuns, runs_key);
  }
  return k.list();
}

// The wait's scripts (prim/lock_wait.cpp) name their keys through this too.
template std::vector<std::string_view> Lock::keys<redis::contract::lock_acquire>(
    const std::string&, const std::string&, const std::string&) const;
template std::vector<std::string_view> Lock::keys<redis::contract::lock_abandon>(
    const std::string&, const std::string&, const std::string&) const;
template std::vector<std::string_view> Lock::keys<redis::contract::lock_return>(
    const std::string&, const std::string&, const std::string&) const;

std::unique_ptr<LockWaiter> Lock::waiter(const std::string& owner, Millis lease, HoldKind kind,
                                         LockMode mode, const std::string& wait_id) {
  if (rw_) return rw_->waiter(owner, lease, kind, mode, wait_id);
  if (mode == LockMode::kShared) refuse_shared();
  if (fair_) return fair_->waiter(owner, lease, kind, wait_id);
  return make_lock_wait(*this, owner, lease, kind, mode, wait_id);
}

Acquisition Lock::try_acquire(const std::string& owner, Millis lease, HoldKind kind,
                              LockMode mode) {
  return acquire(owner, lease, SteadyClock::now(), {}, kind, mode);
}

Acquisition Lock::acquire(const std::string& owner, Millis lease, Deadline until,
                          const WaitHooks& hooks, HoldKind kind, LockMode mode) {
  if (rw_) return rw_->acquire(owner, lease, until, hooks, kind, mode);
  if (mode == LockMode::kShared) refuse_shared();
  if (fair_) return fair_->acquire(owner, lease, until, hooks, kind);
  return wait_for_lock(*this, owner, lease, until, hooks, kind, mode);
}

void Lock::refuse_shared() const {
  // Readers live in rlock's own keys, beside an absent lock hash: a Redisson client would
  // take the lock they hold.
  if (layout_.locks_only()) {
    throw UsageError(
        "--shared under --layout redisson is Redisson's read-write lock: use "
        "--redisson-object read-write-lock");
  }
}

void Lock::throw_refusal(const redis::ReplyError& e, const std::string& owner) const {
  if (e.code() == "SELF") {
    std::string rest = e.reply().substr(e.reply().find(' ') + 1);
    size_t space = rest.find(' ');
    throw waits_for_itself(rest.substr(0, space),
                           space == std::string::npos ? "" : rest.substr(space + 1));
  }
  if (e.code() != "UPGRADE") throw;
  throw WaitsForItself(
      "lock '" + name_ + "' is held shared by " + owner +
      "; taking it exclusively too would wait for itself (release the shared hold first)");
}

WaitsForItself Lock::waits_for_itself(const std::string& what, const std::string& id) const {
  const AncestorHold* a = find_ancestor(ancestry_, id);
  std::string hold = "hold " + id + (a ? ", owner '" + a->owner + "'" : std::string());
  std::string why;
  if (what == "exclusive") {
    why = "is held by the rlock exec this command runs under (" + hold + ")";
  } else if (what == "shared") {
    why = "is held shared by the rlock exec --shared this command runs under (" + hold +
          "); an exclusive hold can only come after it ends";
  } else {
    why = "is held shared by the rlock exec --shared this command runs under (" + hold +
          ") and a writer queued ahead of this request waits for it to end";
  }
  return WaitsForItself(
      "lock '" + name_ + "' " + why +
      ": this request would wait for itself, so it is refused and nothing changed "
      "(take what the job needs before that exec, or outside it)");
}

Release Lock::release(const std::string& owner, Millis keep, const std::string& hold_id,
                      LockMode mode, const std::string& run_end) {
  // Redisson's read-write lock has no count-0 hold (--min-hold) nor run history: the
  // commands refuse them with it.
  if (rw_) return rw_->release(owner, hold_id, mode);
  if (mode == LockMode::kShared) refuse_shared();
  if (fair_) return fair_->release(owner, keep, hold_id);
  // A plain unlock counts down: its own reply record makes a repeat after a lost reply
  // report the first run's count instead of counting down again.
  std::string request_key = layout_.request_key(name_, hold_id.empty() ? "-" : hold_id);
  std::string reply_key = layout_.reply_key(name_, random_hex(16));
  YieldToServer yield;  // the lock may go to a waiter with the reply
  using C = redis::contract::lock_release;
  const std::string field = layout_.owner_field(owner), keep_ms = millis_arg(keep),
                    claim = millis_arg(kClaimWindow), ttl = reply_record_ttl_arg(topology_);
  redis::ScriptArgs args = redis::args_of<C>();
  if (!run_end.empty()) args.set(C::kArgRunEnd, run_end);
  auto reply = run_object_script(
      topology_, redis::scripts::lock_release,
      keys<C>(request_key, reply_key, run_end.empty() ? std::string() : runs_key_),
      args.set(C::kArgOwner, field)
          .set(C::kArgChannel, channel_)
          .set(C::kArgKeepMs, keep_ms)
          .set(C::kArgHoldId, hold_id)
          .set(C::kArgClaimMs, claim)
          .set(C::kArgKind, kind_name(hold_id.empty() ? HoldKind::kLock : HoldKind::kExec, mode))
          .set(C::kArgReplyTtl, ttl)
          .set(C::kArgForeignChannel, foreign_channel_)
          .set(C::kArgFloor, "")
          .list(),
      kKind, redis::Retry::kIdempotent);
  Release r;
  long long status = reply.at(0).integer();
  if (status == 1) {
    r.outcome = Release::Outcome::kReleased;
    r.remaining = reply.at(1).integer();
    return r;
  }
  r.outcome = status == 0 ? Release::Outcome::kNotHeld : Release::Outcome::kExecRunning;
  r.holders = decode_holders(reply, 1, key_);
  return r;
}

void Lock::give_back(const std::string& owner, const Held& held, HoldKind kind) noexcept {
  if (fair_) return fair_->give_back(owner, held, kind);
  if (rw_) return rw_->give_back(owner, held, kind);
  // An exec hold is named by its id; a `lock` hold is its owner's level, counted down once.
  std::string hold_id = kind == HoldKind::kExec ? held.hold_id : std::string();
  std::string request_key = layout_.request_key(name_, hold_id.empty() ? "-" : hold_id);
  std::string reply_key = layout_.reply_key(name_, random_hex(16));
  // The owner as the layout stores it (Redisson's field), and Redisson's channel told when
  // the lock is free, as by release().
  using C = redis::contract::lock_release;
  const std::string field = layout_.owner_field(owner), claim = millis_arg(kClaimWindow),
                    ttl = reply_record_ttl_arg(topology_);
  clean_up(topology_, redis::scripts::lock_release, keys<C>(request_key, reply_key),
           redis::args_of<C>()
               .set(C::kArgOwner, field)
               .set(C::kArgChannel, channel_)
               .set(C::kArgKeepMs, "0")
               .set(C::kArgHoldId, hold_id)
               .set(C::kArgClaimMs, claim)
               .set(C::kArgKind, kind_name(kind, held.mode))
               .set(C::kArgReplyTtl, ttl)
               .set(C::kArgForeignChannel, foreign_channel_)
               .set(C::kArgFloor, "")
               .strings());
}

std::vector<Holder> Lock::force_release() {
  // Under Redisson's layout the name's hash may be a read-write lock that only Java knows
  // of, whatever --redisson-object says: it is removed as Redisson's forceUnlock does.
  if (fair_) return fair_->force_release();
  if (layout_.locks_only()) {
    if (auto holders = RedissonRwLock(topology_, layout_, name_).force_release()) return *holders;
  }
  std::string request_key = layout_.request_key(name_, "-");
  std::string reply_key = layout_.reply_key(name_, random_hex(16));
  using C = redis::contract::lock_force_release;
  const std::string claim = millis_arg(kClaimWindow), ttl = reply_record_ttl_arg(topology_);
  auto reply = run_object_script(topology_, redis::scripts::lock_force_release,
                                 keys<C>(request_key, reply_key),
                                 redis::args_of<C>()
                                     .set(C::kArgChannel, channel_)
                                     .set(C::kArgClaimMs, claim)
                                     .set(C::kArgReplyTtl, ttl)
                                     .set(C::kArgForeignChannel, foreign_channel_)
                                     .list(),
                                 kKind, redis::Retry::kIdempotent);
  // owner, count, note triples.
  std::vector<Holder> holders;
  for (size_t i = 0; i + 2 < reply.size(); i += 3) {
    try {
      holders.push_back({reply.at(i).str(), reply.at(i + 1).integer(), reply.at(i + 2).str()});
    } catch (const DataError&) {
      throw DataError("key '" + key_ + "' holds a hash that is not a lock (field '" +
                      reply.at(i).str() + "' is not a reentry count)");
    }
  }
  return holders;
}

Millis Lock::renew(const std::string& owner, Millis lease, const std::string& hold_id,
                   LockMode mode) {
  if (rw_) return rw_->renew(owner, lease, hold_id, mode);
  if (fair_) return fair_->renew(owner, lease, hold_id);
  // A shared hold is its reader entry: the owner's (`lock --shared`) or this hold's own.
  const std::string field = layout_.owner_field(owner);
  std::string reader;
  if (mode == LockMode::kShared) reader = hold_id.empty() ? field : field + '\x1f' + hold_id;
  using C = redis::contract::lock_renew;
  const std::string lease_ms = millis_arg(lease);
  auto synced = topology_.run_synced(
      redis::scripts::lock_renew,
      redis::keys_of<C>()
          .set(C::kKeyLock, key_)
          .set(C::kKeyExec, exec_key_)
          .set(C::kKeyReaders, readers_key_)
          .set(C::kKeyReaderExpiries, reader_expiries_key_)
          .set(C::kKeyNotes, notes_key_)
          .set(C::kKeyPolicy, policy_key_)
          .list(),
      redis::args_of<C>()
          .set(C::kArgOwner, field)
          .set(C::kArgLease, lease_ms)
          .set(C::kArgHoldId, mode == LockMode::kShared ? std::string_view() : hold_id)
          .set(C::kArgReader, reader)
          .list(),
      redis::Retry::kIdempotent, "lock '" + name_ + "'");
  Millis left(std::max<long long>(synced.reply.integer(), -1));
  if (left.count() > 0) {
    require_acks(synced.acks,
                 "the renewal does not count (the hold may be lost at its old deadline)");
  }
  return left;
}

}  // namespace rlock::prim
