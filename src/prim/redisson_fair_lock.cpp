#include "prim/redisson_fair_lock.hpp"

#include <algorithm>

#include "prim/object_script.hpp"
#include "redis/errors.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/owner.hpp"
#include "util/yield_to_server.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "lock";

std::string braced(std::string_view what, std::string_view name) {
  std::string key(what);
  key.append(":{").append(name).push_back('}');
  return key;
}

// Redisson's threadWaitTime for a wait of `wait_left`: tryLock(waitTime) queues with its
// own wait, lock() (and a try, which never queues) with fairLockWaitTimeout. Never more
// than that: a killed rlock waiter must not stall Java's fair waiters longer than a dead
// lock() waiter does (a longer wait keeps its place as a lock() waiter does, for that long).
Millis thread_wait(Millis wait_left) {
  return wait_left.count() > 0 ? std::min(wait_left, kRedissonFairWait) : kRedissonFairWait;
}

}  // namespace

std::string RedissonFairLayout::queue_key(std::string_view name) const {
  return braced("redisson_lock_queue", name);
}
std::string RedissonFairLayout::timeouts_key_of(std::string_view name) const {
  return braced("redisson_lock_timeout", name);
}
std::string RedissonFairLayout::fair_exec_key(std::string_view name) const {
  return prefix() + "redisson:{" + std::string(name) + "}:fexec";
}
std::string RedissonFairLayout::unlock_latch_key(std::string_view name,
                                                 std::string_view request_id) const {
  return braced("redisson_unlock_latch", name) + ":" + std::string(request_id);
}

// One acquisition request: a waiter in Redisson's queue under the owner's field, woken on
// its own channel. Its id names its exec hold and its request record.
class FairWait : public LockWaiter {
 public:
  FairWait(RedissonFairLock& lock, const std::string& owner, Millis lease, HoldKind kind,
           std::string id)
      : lock_(lock),
        field_(lock.layout_.owner_field(owner)),
        lease_(lease),
        kind_(kind),
        id_(std::move(id)),
        request_key_(lock.layout_.request_key(lock.name_, id_)) {}

  Step attempt(Mode mode, Millis wait_left) override {
    const Deadline sent = SteadyClock::now();
    if (mode == Mode::kWait || !wait_) wait_ = thread_wait(wait_left);
    using C = redis::contract::redisson_fair_acquire;
    const std::string lease_ms = millis_arg(lease_), wait_ms = millis_arg(*wait_),
                      hold_id = kind_ == HoldKind::kExec ? id_ : std::string();
    const auto keys = redis::keys_of<C>()
                          .set(C::kKeyLock, lock_.lock_key_)
                          .set(C::kKeyQueue, lock_.queue_key_)
                          .set(C::kKeyTimeouts, lock_.timeouts_key_)
                          .set(C::kKeyFence, lock_.fence_key_)
                          .set(C::kKeyExec, lock_.exec_key_)
                          .set(C::kKeyRequest, request_key_)
                          .list();
    const auto args = redis::args_of<C>()
                          .set(C::kArgField, field_)
                          .set(C::kArgLease, lease_ms)
                          .set(C::kArgWait, wait_ms)
                          .set(C::kArgMode, mode_word(mode))
                          .set(C::kArgHoldId, hold_id)
                          .set(C::kArgAncestry, lock_.ancestry_)
                          .list();
    redis::Acks acks;
    acks.about = "lock '" + lock_.name_ + "'";
    acks.judged_by_reply = after_queueing(mode);
    auto reply = run(keys, args, acks);
    if (reply.at(0).integer() == 1) {
      require_acks(acks, "the hold it took was given back");
      Held h;
      h.count = reply.at(1).integer();
      h.fence = reply.at(2).integer();
      h.lease = Millis(reply.at(3).integer());
      h.fresh = reply.at(4).integer() == 1;
      h.hold_id = hold_id;
      h.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
      h.deadline = sent + lease_ - lock_.topology_.drift(lease_);
      result_ = h;
      return {true, Millis(0), {}, {}, -1};
    }
    return busy(reply, mode);
  }

  std::vector<std::string> channels() const override {
    // The waiter's own channel is both: Redisson's releases (PUBLISH, or SPUBLISH in its
    // sharded mode) and rlock's (both) tell only the head waiter, there.
    return {own_channel()};
  }
  std::vector<std::string> classic_channels() const override { return {own_channel()}; }

  void give_up() noexcept override {
    using C = redis::contract::redisson_fair_abandon;
    const std::string wait_ms = millis_arg(wait_.value_or(kRedissonFairWait)),
                      hold_id = kind_ == HoldKind::kExec ? id_ : std::string(),
                      channel = lock_.layout_.foreign_lock_channel(lock_.name_);
    clean_up(lock_.topology_, redis::scripts::redisson_fair_abandon,
             redis::keys_of<C>()
                 .set(C::kKeyLock, lock_.lock_key_)
                 .set(C::kKeyQueue, lock_.queue_key_)
                 .set(C::kKeyTimeouts, lock_.timeouts_key_)
                 .set(C::kKeyExec, lock_.exec_key_)
                 .set(C::kKeyRequest, request_key_)
                 .list(),
             redis::args_of<C>()
                 .set(C::kArgField, field_)
                 .set(C::kArgWait, wait_ms)
                 .set(C::kArgHoldId, hold_id)
                 .set(C::kArgChannel, channel)
                 .strings());
  }

  Acquisition result() const override { return result_; }

 private:
  redis::Reply run(const std::vector<std::string_view>& keys,
                   const std::vector<std::string_view>& args, redis::Acks& acks) {
    try {
      return run_object_script(lock_.topology_, redis::scripts::redisson_fair_acquire, keys, args,
                               kKind, redis::Retry::kIdempotent, &acks);
    } catch (const redis::ReplyError& e) {
      if (e.code() != "SELF") throw;
      const std::string id = e.reply().substr(e.reply().find(' ') + 1);
      throw WaitsForItself("lock '" + lock_.name_ +
                           "' is held by the rlock exec this command runs under (hold " + id +
                           "): this request would wait for itself, so it is refused and "
                           "nothing changed (take what the job needs before that exec, or "
                           "outside it)");
    }
  }

  std::string own_channel() const {
    return lock_.layout_.foreign_lock_channel(lock_.name_) + ":" + field_;
  }

  // {0, ttl, next_ms, ahead, field, count, ...}
  Step busy(const redis::Reply& reply, Mode mode) {
    Busy b;
    const Millis next(reply.at(2).integer());
    const long long ahead = reply.at(3).integer();
    b.holders = decode_holders(reply, 4, lock_.lock_key_);
    b.holders_total = static_cast<long long>(b.holders.size());
    b.ttl = next;
    result_ = b;
    std::string who;
    for (const auto& h : b.holders)
      who += (who.empty() ? "" : ", ") + h.owner + " (count " + std::to_string(h.count) + ")";
    Step step{false, next, who,
              b.holders.empty() ? "free, a waiter ahead takes it first" : "held by " + who,
              mode == Mode::kTry || mode == Mode::kLast ? -1 : ahead};
    step.ttl_is_lease = !b.holders.empty();
    return step;
  }

  RedissonFairLock& lock_;
  std::string field_;
  Millis lease_;
  HoldKind kind_;
  std::string id_;
  std::string request_key_;
  std::optional<Millis> wait_;  // the threadWaitTime this wait queued with
  Acquisition result_ = Busy{};
};

RedissonFairLock::RedissonFairLock(redis::Topology& topology, const RedissonFairLayout& layout,
                                   std::string name)
    : topology_(topology),
      layout_(layout),
      name_(std::move(name)),
      lock_key_(layout.lock_key(name_)),
      queue_key_(layout.queue_key(name_)),
      timeouts_key_(layout.timeouts_key_of(name_)),
      fence_key_(layout.fence_key(name_)),
      exec_key_(layout.fair_exec_key(name_)),
      channel_(layout.foreign_lock_channel(name_)) {}

std::unique_ptr<LockWaiter> RedissonFairLock::waiter(const std::string& owner, Millis lease,
                                                     HoldKind kind, const std::string& wait_id) {
  return std::make_unique<FairWait>(*this, owner, lease, kind, wait_id);
}

Acquisition RedissonFairLock::acquire(const std::string& owner, Millis lease, Deadline until,
                                      const WaitHooks& hooks, HoldKind kind) {
  FairWait wait(*this, owner, lease, kind, random_hex(8));
  const WaitOutcome outcome = wait_for(topology_, wait, until, hooks);
  Acquisition a = wait.result();
  if (outcome == WaitOutcome::kInterrupted) {
    Busy b = std::holds_alternative<Busy>(a) ? std::get<Busy>(a) : Busy{};
    b.interrupted = true;
    return b;
  }
  return a;
}

Release RedissonFairLock::release(const std::string& owner, Millis keep,
                                  const std::string& hold_id) {
  YieldToServer yield;  // the head waiter is woken with the reply
  using C = redis::contract::redisson_fair_release;
  const std::string field = layout_.owner_field(owner), lease = millis_arg(Millis(30000)),
                    latch_ms = reply_record_ttl_arg(topology_), keep_ms = millis_arg(keep),
                    latch = layout_.unlock_latch_key(name_, random_hex(16));
  auto reply = run_object_script(topology_, redis::scripts::redisson_fair_release,
                                 redis::keys_of<C>()
                                     .set(C::kKeyLock, lock_key_)
                                     .set(C::kKeyQueue, queue_key_)
                                     .set(C::kKeyTimeouts, timeouts_key_)
                                     .set(C::kKeyLatch, latch)
                                     .set(C::kKeyExec, exec_key_)
                                     .list(),
                                 redis::args_of<C>()
                                     .set(C::kArgField, field)
                                     .set(C::kArgLease, lease)
                                     .set(C::kArgChannel, channel_)
                                     .set(C::kArgLatchMs, latch_ms)
                                     .set(C::kArgHoldId, hold_id)
                                     .set(C::kArgKeepMs, keep_ms)
                                     .list(),
                                 kKind, redis::Retry::kIdempotent);
  Release r;
  const long long status = reply.at(0).integer();
  if (status == 1) {
    r.outcome = Release::Outcome::kReleased;
    r.remaining = reply.at(1).integer();
    return r;
  }
  r.outcome = status == 0 ? Release::Outcome::kNotHeld : Release::Outcome::kExecRunning;
  r.holders = decode_holders(reply, 1, lock_key_);
  return r;
}

void RedissonFairLock::give_back(const std::string& owner, const Held& held,
                                 HoldKind kind) noexcept {
  try {
    release(owner, Millis(0), kind == HoldKind::kExec ? held.hold_id : std::string());
  } catch (const std::exception&) {  // it expires with its lease
  }
}

std::vector<Holder> RedissonFairLock::force_release() {
  using C = redis::contract::redisson_fair_force;
  auto reply = run_object_script(topology_, redis::scripts::redisson_fair_force,
                                 redis::keys_of<C>()
                                     .set(C::kKeyLock, lock_key_)
                                     .set(C::kKeyQueue, queue_key_)
                                     .set(C::kKeyTimeouts, timeouts_key_)
                                     .set(C::kKeyExec, exec_key_)
                                     .list(),
                                 redis::args_of<C>().set(C::kArgChannel, channel_).list(), kKind,
                                 redis::Retry::kIdempotent);
  return decode_holders(reply, 0, lock_key_);
}

Millis RedissonFairLock::renew(const std::string& owner, Millis lease, const std::string& hold_id) {
  using C = redis::contract::redisson_fair_renew;
  const std::string field = layout_.owner_field(owner), lease_ms = millis_arg(lease);
  auto synced = topology_.run_synced(
      redis::scripts::redisson_fair_renew,
      redis::keys_of<C>().set(C::kKeyLock, lock_key_).set(C::kKeyExec, exec_key_).list(),
      redis::args_of<C>()
          .set(C::kArgField, field)
          .set(C::kArgLease, lease_ms)
          .set(C::kArgHoldId, hold_id)
          .list(),
      redis::Retry::kIdempotent, "lock '" + name_ + "'");
  const Millis left(std::max<long long>(synced.reply.integer(), 0));
  if (left.count() > 0) {
    require_acks(synced.acks,
                 "the renewal does not count (the hold may be lost at its old deadline)");
  }
  return left;
}

void RedissonFairLock::set_ancestry(const std::vector<AncestorHold>& holds) {
  ancestry_.clear();
  for (const auto& h : holds) ancestry_ += h.id + " ";
}

std::vector<RedissonFairLock::Waiter> RedissonFairLock::queue(redis::Topology& topology,
                                                              const RedissonFairLayout& layout,
                                                              const std::string& name) {
  const std::string q = layout.queue_key(name), z = layout.timeouts_key_of(name);
  auto replies =
      topology.pipeline({{"LRANGE", q, "0", "99"}, {"ZRANGE", z, "0", "-1", "WITHSCORES"}},
                        redis::Retry::kIdempotent, q);
  std::vector<Waiter> out;
  const auto& fields = replies.at(0);
  const auto& scores = replies.at(1);
  for (size_t i = 0; i < fields.size(); ++i) {
    Waiter w{fields.at(i).str(), 0};
    for (size_t j = 0; j + 1 < scores.size(); j += 2) {
      if (scores.at(j).str() == w.field) w.timeout_ms = std::stoll(scores.at(j + 1).str());
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace rlock::prim
