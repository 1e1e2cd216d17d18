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
// When a request granted by too few of a quorum's members (and no busy reply) tries again.
constexpr Millis kSplitRetry{50};
// Holders a waiting line names; it is one line of a terminal.
constexpr size_t kSummaryOwners = 3;

// lock_acquire's queue_policy: "<priority>:<flags>" ("s" supersede, "c" cancel-running).
std::string policy_arg(const QueuePolicy& p) {
  if (p.priority == 0 && !p.supersede) return "";
  return std::to_string(p.priority) + ":" + (p.supersede ? "s" : "") +
         (p.supersede && p.cancel_running ? "c" : "");
}

const char* kind_name(HoldKind k, LockMode m) {
  if (m == LockMode::kShared) return k == HoldKind::kExec ? "sexec" : "slock";
  return k == HoldKind::kExec ? "exec" : "lock";
}

}  // namespace

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

// One acquisition request: its id is the same in every attempt, so that a repeated attempt
// is idempotent and the clean-up can name what it took.
class LockWait : public LockWaiter {
 public:
  LockWait(Lock& lock, std::string owner, Millis lease, HoldKind kind, LockMode mode,
           std::string id = random_hex(8))
      : lock_(lock),
        owner_(lock.layout_.owner_field(owner)),
        lease_(lease),
        kind_(kind_name(kind, mode)),
        mode_(mode),
        id_(std::move(id)),
        request_key_(lock.layout_.request_key(lock.name_, id_)),
        member_(std::to_string(lease.count()) + ":" + kind_ + ":" + id_ + ":" + owner_),
        ancestry_(ancestry_arg(lock.ancestry_)),
        policy_(policy_arg(lock.policy_)) {}

  Step attempt(Mode mode, Millis wait_left) override {
    Deadline sent = SteadyClock::now();
    if (!unconfirmed_since_) unconfirmed_since_ = sent;  // until a reply says otherwise
    std::string lease_ms = millis_arg(lease_), wait_ms = millis_arg(wait_left),
                claim = millis_arg(kClaimWindow);
    redis::Acks acks;
    acks.about = "lock '" + lock_.name_ + "'";
    acks.judged_by_reply = after_queueing(mode);
    const std::string seen_fence = std::to_string(seen_fence_);
    using C = redis::contract::lock_acquire;
    const std::vector<std::string_view> args =
        redis::args_of<C>()
            .set(C::kArgOwner, owner_)
            .set(C::kArgLease, lease_ms)
            .set(C::kArgMode, mode_word(mode))
            .set(C::kArgWaitMs, wait_ms)
            .set(C::kArgRequestId, id_)
            .set(C::kArgKind, kind_)
            .set(C::kArgChannel, lock_.channel_)
            .set(C::kArgClaimMs, claim)
            .set(C::kArgArrival, arrival_)
            .set(C::kArgAncestry, ancestry_)
            .set(C::kArgSeenFence, seen_fence)
            .set(C::kArgForeignChannel, lock_.foreign_channel_)
            .set(C::kArgNote, lock_.note_)
            .set(C::kArgQueuePolicy, policy_)
            .list();
    const auto resend = resent_args(args, C::kArgMode, mode);
    unusable_.reset();
    std::optional<redis::Reply> got;
    try {
      got.emplace(run_object_script(lock_.topology_, redis::scripts::lock_acquire,
                                    lock_.keys<C>(request_key_), args, kKind,
                                    redis::Retry::kIdempotent, &acks, &resend));
    } catch (const redis::UnusableGrantError& e) {
      // Granted by a quorum's majority too late, or its token never confirmed: nobody holds
      // it. Given back as a split grant is; a wait tries again, and one that ends on it is
      // an outage (Lock::acquire), not a busy lock.
      unusable_ = e.what();
      give_back(mode);
      unconfirmed_since_.reset();
      result_ = Busy{};
      return {false, kSplitRetry, {}, "granted by the quorum's members too late to use", -1};
    } catch (const redis::ReplyError& e) {
      lock_.throw_refusal(e, owner_);
    }
    const redis::Reply& reply = *got;
    long long status = reply.at(0).integer();
    if (status == -2) {
      // Granted by fewer than a majority of a quorum's members: what it took
      // goes back at once. A wait keeps its place; a request that ends here is given up by
      // its id (a late grant is undone too) and the wait, if any, goes on under a new id.
      give_back(mode);
      if (reply.size() < 7) {
        unconfirmed_since_.reset();
        result_ = Busy{};
        return {false, kSplitRetry, {}, "split between the quorum's members", -1};
      }
    }
    if (status == 1) {
      result_ = held(reply, sent, acks);
      return {true, Millis(0), {}, {}, -1};
    }
    unconfirmed_since_.reset();
    return not_held(reply, status, mode);
  }

 private:
  // A reply that took nothing: busy, given up by its own clean-up (-1) or superseded (-3).
  Step not_held(const redis::Reply& reply, long long status, Mode mode) {
    Busy b;
    if (status == -1) {  // given up by its own clean-up: nothing was taken
      result_ = b;
      return {false, Millis(-1), {}, {}, -1};
    }
    if (status == -3) {  // superseded: the wait ends, having taken nothing
      b.superseded_by = reply.at(1).str();
      result_ = b;
      Step ended{false, Millis(-1), {}, "superseded by " + b.superseded_by, -1};
      ended.ended = true;
      return ended;
    }
    Step step = busy(reply, b);
    if (mode == Mode::kTry || mode == Mode::kLast) step.ahead = -1;
    return step;
  }

  // A granted reply {1, count, fence, pttl, fresh} as the hold it is.
  Held held(const redis::Reply& reply, Deadline sent, const redis::Acks& acks) {
    // The wait gives back what this request took (give_up) on the way out.
    require_acks(acks, reply.at(4).integer() == 1
                           ? "the hold it took was given back"
                           : "the re-entry it took was given back (the earlier hold stays)");
    Held h;
    h.count = reply.at(1).integer();
    h.fence = reply.at(2).integer();
    h.lease = Millis(reply.at(3).integer());
    h.fresh = reply.at(4).integer() == 1;
    h.hold_id = id_;
    h.mode = mode_;
    h.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
    // The hold may have been taken by an earlier try whose reply was lost. A quorum's
    // members each count the lease on their own clock: the drift is left out.
    const Millis drift = lock_.topology_.drift(lease_);
    h.deadline = std::min(sent, *unconfirmed_since_) + lease_ - drift;
    if (drift.count() > 0) {
      // RedLock's validity: the lease a majority has in force, less the time the request
      // took and the drift.
      h.validity =
          std::max(h.lease - std::chrono::duration_cast<Millis>(SteadyClock::now() - sent) - drift,
                   Millis(0));
    }
    return h;
  }

  // A busy reply {0, ttl, arrival, same_owner_exec, holders_total, seen_fence, ahead,
  // holders...} into `b` (kept as the result) and the wait's step.
  Step busy(const redis::Reply& reply, Busy& b) {
    b.ttl = Millis(reply.at(1).integer());
    long long arrival = reply.at(2).integer();
    if (arrival > 0) arrival_ = std::to_string(arrival);
    b.same_owner_exec = reply.at(3).integer() == 1;
    b.holders_total = reply.at(4).integer();
    // Never lower: a server that answers with a lower token lost data (a restart), and the
    // first claim after it would otherwise teach the next one that nothing was lost.
    seen_fence_ = std::max(seen_fence_, reply.at(5).integer());
    const long long ahead = reply.at(6).integer();
    b.holders = decode_holders(reply, 7, lock_.key_);
    result_ = b;
    std::string who, owners;
    for (const auto& h : b.holders)
      who += (who.empty() ? "" : ", ") + h.owner + " (count " + std::to_string(h.count) + ")";
    const size_t named = std::min(b.holders.size(), kSummaryOwners);
    for (size_t i = 0; i < named; ++i) owners += (i == 0 ? "" : ", ") + b.holders[i].owner;
    if (b.holders_total > static_cast<long long>(named))
      owners += " and " + std::to_string(b.holders_total - static_cast<long long>(named)) + " more";
    Step step{false, b.ttl, who, owners.empty() ? "held" : "held by " + owners, ahead};
    return step;
  }

 public:
  std::vector<std::string> channels() const override {
    std::vector<std::string> out = {lock_.channel_, lock_.layout_.grant_channel(lock_.name_, id_)};
    // Redisson announces a release with PUBLISH (classic_channels) or, in its sharded mode
    // on a Redis 7 cluster, with SPUBLISH, which only a sharded subscription hears. (Its
    // `{NAME}` tag puts it in the slot of rlock's own channels.)
    if (!lock_.foreign_channel_.empty()) out.push_back(lock_.foreign_channel_);
    return out;
  }

  std::vector<std::string> classic_channels() const override {
    if (lock_.foreign_channel_.empty()) return {};
    return {lock_.foreign_channel_};
  }

  // Gives back the hold this request took, if any, and nothing else (lua/lock_return.lua):
  // the request stays queued under the same id.
  void give_back_taken() noexcept {
    clean_up_request<redis::contract::lock_return>(redis::scripts::lock_return);
  }

  // Gives back what this request took without a usable hold: a request that ends here
  // is given up by its id (a late grant is undone too) and a wait goes on under a new id;
  // a wait's queued attempt keeps its place.
  void give_back(Mode mode) {
    if (mode == Mode::kTry || mode == Mode::kLast) {
      give_up();
      renew_id();
    } else {
      give_back_taken();
    }
  }

  // Why the last attempt's majority grant could not be used (nullopt: it was not that).
  const std::optional<std::string>& unusable() const { return unusable_; }

  // A new request id, for a wait that goes on after its request was given up.
  void renew_id() {
    id_ = random_hex(8);
    request_key_ = lock_.layout_.request_key(lock_.name_, id_);
    member_ = std::to_string(lease_.count()) + ":" + kind_ + ":" + id_ + ":" + owner_;
  }

  void give_up() noexcept override {
    clean_up_request<redis::contract::lock_abandon>(redis::scripts::lock_abandon);
  }

  Acquisition result() const override { return result_; }

 private:
  // Runs the clean-up `Contract` (lock_abandon or lock_return) of this request.
  template <class Contract>
  void clean_up_request(const redis::Script& script) noexcept {
    using C = Contract;
    const std::string claim = millis_arg(kClaimWindow);
    const auto args = redis::args_of<C>()
                          .set(C::kArgOwner, owner_)
                          .set(C::kArgChannel, lock_.channel_)
                          .set(C::kArgHoldId, id_)
                          .set(C::kArgClaimMs, claim)
                          .set(C::kArgForeignChannel, lock_.foreign_channel_)
                          .set(C::kArgFloor, "")
                          .set(C::kArgMember, member_)
                          .strings();
    clean_up(lock_.topology_, script, lock_.keys<C>(request_key_), args);
  }

  Lock& lock_;
  std::string owner_;
  Millis lease_;
  std::string kind_;  // as in the waiters member: lock, exec, slock, sexec
  LockMode mode_;
  std::string id_;
  std::string request_key_;
  std::string member_;
  std::string arrival_;  // our place in the queue, kept across reconnections
  std::string ancestry_;
  std::string policy_;  // lock_acquire's queue_policy
  // The highest token a busy reply gave: a server that has it has the holds seen until then.
  long long seen_fence_ = 0;
  std::optional<Deadline> unconfirmed_since_;
  std::optional<std::string> unusable_;
  Acquisition result_ = Busy{};
};

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

std::unique_ptr<LockWaiter> Lock::waiter(const std::string& owner, Millis lease, HoldKind kind,
                                         LockMode mode, const std::string& wait_id) {
  if (rw_) return rw_->waiter(owner, lease, kind, mode, wait_id);
  if (mode == LockMode::kShared) refuse_shared();
  if (fair_) return fair_->waiter(owner, lease, kind, wait_id);
  return std::make_unique<LockWait>(*this, owner, lease, kind, mode, wait_id);
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
  LockWait wait(*this, owner, lease, kind, mode);
  const WaitOutcome outcome = wait_for(topology_, wait, until, hooks);
  // The lock was free, and the quorum's members granted it too late or unconfirmed.
  if (outcome == WaitOutcome::kTimedOut && wait.unusable())
    throw UnavailableError(*wait.unusable());
  Acquisition a = wait.result();
  if (outcome == WaitOutcome::kEnded) return a;  // superseded
  if (outcome == WaitOutcome::kInterrupted) {
    Busy b = std::holds_alternative<Busy>(a) ? std::get<Busy>(a) : Busy{};
    b.interrupted = true;
    return b;
  }
  return a;
}

void Lock::refuse_shared() const {
  // Readers live in rlock's own keys, beside an absent lock hash: a Redisson client would
  // take the lock they hold.
  if (layout_.locks_only()) {
    throw UsageError(
        "--layout redisson covers exclusive locks only (Redisson's RLock); "
        "--shared is refused");
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
