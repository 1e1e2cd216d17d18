// The wait of one lock request (rlock's own layout): its attempts, its place in the
// queue and the clean-up of what it took.
#include <algorithm>

#include "prim/lock.hpp"
#include "prim/lock_quorum.hpp"
#include "prim/object_script.hpp"
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

}  // namespace

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

std::unique_ptr<LockWaiter> make_lock_wait(Lock& lock, const std::string& owner, Millis lease,
                                           HoldKind kind, LockMode mode,
                                           const std::string& wait_id) {
  return std::make_unique<LockWait>(lock, owner, lease, kind, mode, wait_id);
}

Acquisition wait_for_lock(Lock& lock, const std::string& owner, Millis lease, Deadline until,
                          const WaitHooks& hooks, HoldKind kind, LockMode mode) {
  LockWait wait(lock, owner, lease, kind, mode);
  const WaitOutcome outcome = wait_for(lock.topology_, wait, until, hooks);
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

}  // namespace rlock::prim
