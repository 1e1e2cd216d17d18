#include "prim/redisson_rwlock.hpp"

#include <algorithm>
#include <cstdlib>

#include "prim/object_script.hpp"
#include "prim/redisson_layout.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/error.hpp"
#include "util/owner.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "lock";
constexpr size_t kSummaryOwners = 3;

const char* share_word(LockMode mode) { return mode == LockMode::kShared ? "read" : "write"; }

Busy busy_of(const redis::Reply& reply, size_t first, const std::string& key) {
  Busy b;
  b.ttl = Millis(reply.at(1).integer());
  b.holders_total = reply.at(2).integer();
  b.holders = decode_holders(reply, first, key);
  return b;
}

Waitable::Step busy_step(const Busy& b) {
  std::string who, owners;
  for (const auto& h : b.holders)
    who += (who.empty() ? "" : ", ") + h.owner + " (count " + std::to_string(h.count) + ")";
  const size_t named = std::min(b.holders.size(), kSummaryOwners);
  for (size_t i = 0; i < named; ++i) owners += (i == 0 ? "" : ", ") + b.holders[i].owner;
  if (b.holders_total > static_cast<long long>(named))
    owners += " and " + std::to_string(b.holders_total - static_cast<long long>(named)) + " more";
  return {false, b.ttl, who, owners.empty() ? "held" : "held by " + owners, -1};
}

}  // namespace

std::string redisson_rw_channel(std::string_view name) {
  std::string channel = "redisson_rwlock:{";
  channel.append(name).push_back('}');
  return channel;
}

// One acquisition request. Each attempt is a request of its own with its own reply record
// (a repeat after a lost reply gets the first run's answer), so that give_up can tell
// whether the last one, whose reply never came, took a level.
class RwWait : public LockWaiter {
 public:
  RwWait(RedissonRwLock& lock, const std::string& owner, Millis lease, HoldKind kind, LockMode mode,
         std::string id)
      : lock_(lock),
        id_(id.empty() ? random_hex(8) : std::move(id)),
        field_(lock.field(owner, kind == HoldKind::kExec ? id_ : std::string())),
        lease_(lease),
        mode_(mode) {}

  Step attempt(Mode, Millis) override {
    const Deadline sent = SteadyClock::now();
    attempt_reply_ = lock_.layout_.reply_key(lock_.name_, random_hex(8));
    using C = redis::contract::redisson_rw_acquire;
    const std::string lease_ms = millis_arg(lease_), ttl = reply_record_ttl_arg(lock_.topology_);
    redis::Acks acks;
    acks.about = "lock '" + lock_.name_ + "'";
    auto reply = run_object_script(lock_.topology_, redis::scripts::redisson_rw_acquire,
                                   redis::keys_of<C>()
                                       .set(C::kKeyLock, lock_.key_)
                                       .set(C::kKeyTimeouts, lock_.timeouts_)
                                       .set(C::kKeyFence, lock_.fence_key_)
                                       .set(C::kKeyReply, attempt_reply_)
                                       .list(),
                                   redis::args_of<C>()
                                       .set(C::kArgShare, share_word(mode_))
                                       .set(C::kArgField, field_)
                                       .set(C::kArgLease, lease_ms)
                                       .set(C::kArgReplyTtl, ttl)
                                       .list(),
                                   kKind, redis::Retry::kIdempotent, &acks);
    if (reply.at(0).integer() == -1) {  // given up by its own clean-up: nothing was taken
      attempt_reply_.clear();
      result_ = Busy{};
      return {false, Millis(-1), {}, {}, -1};
    }
    if (reply.at(0).integer() == 0) {
      attempt_reply_.clear();
      Busy b = busy_of(reply, 3, lock_.key_);
      refuse_waiting_for_ancestry(b);
      result_ = b;
      return busy_step(b);
    }
    Held h;
    h.count = reply.at(1).integer();
    h.fence = reply.at(2).integer();
    h.lease = Millis(reply.at(3).integer());
    h.fresh = reply.at(4).integer() == 1;
    h.hold_id = id_;
    h.mode = mode_;
    h.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
    h.deadline = sent + lease_ - lock_.topology_.drift(lease_);
    // The wait gives back what this request took (give_up) on the way out.
    require_acks(acks, "the hold it took was given back");
    result_ = h;
    return {true, Millis(0), {}, {}, -1};
  }

  // Redisson's messages ("0", "1") come with PUBLISH or, in its sharded mode, SPUBLISH:
  // the channel is listened to both ways. [1] is this wait's grant channel, which nobody
  // publishes on: Redisson's lock has no queue to hand it over.
  std::vector<std::string> channels() const override {
    return {lock_.channel_, lock_.layout_.grant_channel(lock_.name_, id_)};
  }
  std::vector<std::string> classic_channels() const override { return {lock_.channel_}; }
  bool announces_on(const std::string&) const override { return false; }

  // The level the last attempt took, if its record says it took one (its reply may have
  // been lost): nothing else is ever held by a request that was not granted.
  void give_up() noexcept override {
    if (attempt_reply_.empty()) return;
    using C = redis::contract::redisson_rw_release;
    const std::string ttl = reply_record_ttl_arg(lock_.topology_);
    const std::string release_reply = lock_.layout_.reply_key(lock_.name_, random_hex(16));
    clean_up(lock_.topology_, redis::scripts::redisson_rw_release,
             redis::keys_of<C>()
                 .set(C::kKeyLock, lock_.key_)
                 .set(C::kKeyTimeouts, lock_.timeouts_)
                 .set(C::kKeyTaken, attempt_reply_)
                 .set(C::kKeyReply, release_reply)
                 .list(),
             redis::args_of<C>()
                 .set(C::kArgShare, share_word(mode_))
                 .set(C::kArgField, field_)
                 .set(C::kArgChannel, lock_.channel_)
                 .set(C::kArgLease, "0")
                 .set(C::kArgGiveUp, "1")
                 .set(C::kArgReplyTtl, ttl)
                 .strings());
  }

  Acquisition result() const override { return result_; }

 private:
  // A holder that is an exec this request runs under (its thread is its hold id) only
  // leaves once this request's job is done: waiting would wait for itself.
  void refuse_waiting_for_ancestry(const Busy& b) const {
    for (const auto& a : lock_.ancestry_) {
      const std::string theirs = lock_.field(a.owner, a.id);
      for (const auto& h : b.holders) {
        if (h.owner != theirs && h.owner != theirs + ":write") continue;
        throw WaitsForItself("lock '" + lock_.name_ + "' is held by the rlock exec this " +
                             "command runs under (hold " + a.id + ", owner '" + a.owner +
                             "'): this request would wait for itself, so it is refused and " +
                             "nothing changed (take what the job needs before that exec)");
      }
    }
  }

  RedissonRwLock& lock_;
  std::string id_;
  std::string field_;
  Millis lease_;
  LockMode mode_;
  std::string attempt_reply_;  // the last attempt's reply record; "" when it was busy
  Acquisition result_ = Busy{};
};

RedissonRwLock::RedissonRwLock(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      layout_(layout),
      name_(std::move(name)),
      key_(layout.lock_key(name_)),
      timeouts_("{" + name_ + "}"),
      fence_key_(layout.fence_key(name_)),
      channel_(redisson_rw_channel(name_)) {}

std::string RedissonRwLock::field(const std::string& owner, const std::string& hold_id) const {
  std::string f = layout_.owner_field(owner);
  if (hold_id.empty()) return f;
  // Another thread of the owner's client: the hold id as a positive Java long.
  const unsigned long long thread = std::strtoull(hold_id.c_str(), nullptr, 16) >> 2;
  return f.substr(0, f.rfind(':') + 1) + std::to_string(thread);
}

std::unique_ptr<LockWaiter> RedissonRwLock::waiter(const std::string& owner, Millis lease,
                                                   HoldKind kind, LockMode mode,
                                                   const std::string& wait_id) {
  return std::make_unique<RwWait>(*this, owner, lease, kind, mode, wait_id);
}

Acquisition RedissonRwLock::acquire(const std::string& owner, Millis lease, Deadline until,
                                    const WaitHooks& hooks, HoldKind kind, LockMode mode) {
  RwWait wait(*this, owner, lease, kind, mode, "");
  const WaitOutcome outcome = wait_for(topology_, wait, until, hooks);
  Acquisition a = wait.result();
  if (outcome == WaitOutcome::kInterrupted) {
    Busy b = std::holds_alternative<Busy>(a) ? std::get<Busy>(a) : Busy{};
    b.interrupted = true;
    return b;
  }
  return a;
}

Release RedissonRwLock::release(const std::string& owner, const std::string& hold_id, LockMode mode,
                                Millis lease) {
  using C = redis::contract::redisson_rw_release;
  const std::string f = field(owner, hold_id), lease_ms = millis_arg(lease),
                    ttl = reply_record_ttl_arg(topology_),
                    reply_key = layout_.reply_key(name_, random_hex(16));
  auto reply = run_object_script(topology_, redis::scripts::redisson_rw_release,
                                 redis::keys_of<C>()
                                     .set(C::kKeyLock, key_)
                                     .set(C::kKeyTimeouts, timeouts_)
                                     .set(C::kKeyTaken, fence_key_)
                                     .set(C::kKeyReply, reply_key)
                                     .list(),
                                 redis::args_of<C>()
                                     .set(C::kArgShare, share_word(mode))
                                     .set(C::kArgField, f)
                                     .set(C::kArgChannel, channel_)
                                     .set(C::kArgLease, lease_ms)
                                     .set(C::kArgGiveUp, "0")
                                     .set(C::kArgReplyTtl, ttl)
                                     .list(),
                                 kKind, redis::Retry::kIdempotent);
  Release r;
  if (reply.at(0).integer() == 1) {
    r.outcome = Release::Outcome::kReleased;
    r.remaining = reply.at(1).integer();
    return r;
  }
  r.outcome = Release::Outcome::kNotHeld;
  r.holders = decode_holders(reply, 1, key_);
  return r;
}

void RedissonRwLock::give_back(const std::string& owner, const Held& held, HoldKind kind) noexcept {
  try {
    release(owner, kind == HoldKind::kExec ? held.hold_id : std::string(), held.mode);
  } catch (const std::exception&) {  // it expires with its lease
  }
}

Millis RedissonRwLock::renew(const std::string& owner, Millis lease, const std::string& hold_id,
                             LockMode mode) {
  using C = redis::contract::redisson_rw_renew;
  const std::string f = field(owner, hold_id), lease_ms = millis_arg(lease);
  auto synced = topology_.run_synced(
      redis::scripts::redisson_rw_renew,
      redis::keys_of<C>().set(C::kKeyLock, key_).set(C::kKeyTimeouts, timeouts_).list(),
      redis::args_of<C>()
          .set(C::kArgShare, share_word(mode))
          .set(C::kArgField, f)
          .set(C::kArgLease, lease_ms)
          .list(),
      redis::Retry::kIdempotent, "lock '" + name_ + "'");
  Millis left(std::max<long long>(synced.reply.integer(), 0));
  if (left.count() > 0) {
    require_acks(synced.acks,
                 "the renewal does not count (the hold may be lost at its old deadline)");
  }
  return left;
}

std::optional<std::vector<Holder>> RedissonRwLock::force_release() {
  using C = redis::contract::redisson_rw_force;
  auto reply = run_object_script(
      topology_, redis::scripts::redisson_rw_force,
      redis::keys_of<C>().set(C::kKeyLock, key_).set(C::kKeyTimeouts, timeouts_).list(),
      redis::args_of<C>().set(C::kArgChannel, channel_).list(), kKind, redis::Retry::kIdempotent);
  if (reply.size() == 0) return std::nullopt;
  return decode_holders(reply, 1, key_);
}

}  // namespace rlock::prim
