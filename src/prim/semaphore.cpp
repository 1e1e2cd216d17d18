#include "prim/semaphore.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "prim/lock.hpp"
#include "prim/object_script.hpp"
#include "prim/redisson_semaphore.hpp"
#include "redis/errors.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/error.hpp"
#include "util/owner.hpp"
#include "util/whole_number.hpp"
#include "util/yield_to_server.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "semaphore";

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// The semaphore script, with a stored capacity that differs from --permits reported as
// one line naming both.
redis::Reply run_sem_script(redis::Topology& topology, const redis::Script& script,
                            const std::vector<std::string_view>& keys,
                            const std::vector<std::string>& args, const std::string& name,
                            redis::Retry retry, redis::Acks* acks = nullptr,
                            std::optional<Waitable::Mode> mode = std::nullopt) {
  try {
    const auto sent = views(args);
    // A waiter's attempt resent elsewhere goes as a claim.
    const auto resend =
        mode ? resent_args(sent, redis::contract::sem_acquire::kArgMode, *mode) : sent;
    return run_object_script(topology, script, keys, sent, kKind, retry, acks,
                             mode ? &resend : nullptr);
  } catch (const redis::ReplyError& e) {
    if (e.code() != "CAPACITY") throw;
    std::string rest = e.reply().substr(e.reply().find(' ') + 1);
    std::string stored = rest.substr(0, rest.find(' '));
    std::string given = rest.substr(rest.find(' ') + 1);
    if (size_t space = given.find(' '); space != std::string::npos) {
      throw DataError("semaphore '" + name + "' was resized to capacity " + stored +
                      " while this request for " + given.substr(space + 1) +
                      " permits waited; it can never be served and left the queue");
    }
    throw DataError("semaphore '" + name + "' has capacity " + stored + ", not --permits " + given +
                    "; nothing changed (add --resize to change its capacity)");
  }
}

std::vector<std::string> strings_from(const redis::ReplyView& r, size_t first) {
  std::vector<std::string> out;
  for (size_t i = first; i < r.size(); ++i) out.push_back(r.at(i).str());
  return out;
}

// "<count>:<wait id>:<owner>"
PermitWaiter parse_member(const std::string& member) {
  PermitWaiter w;
  size_t a = member.find(':');
  size_t b = a == std::string::npos ? a : member.find(':', a + 1);
  if (b == std::string::npos) return w;
  w.count = std::strtoll(member.c_str(), nullptr, 10);
  w.owner = member.substr(b + 1);
  return w;
}

}  // namespace

// One acquisition request: the same id in every attempt, so that a repeated attempt is
// idempotent and the clean-up can name what it took.
class PermitWait : public Waitable {
 public:
  PermitWait(Semaphore& sem, const PermitRequest& req)
      : sem_(sem),
        req_(req),
        id_(random_hex(8)),
        request_key_(sem.layout_.sem_request_key(sem.name_, id_)),
        member_(std::to_string(req.count) + ":" + id_ + ":" + req.owner) {}

  Step attempt(Mode mode, Millis wait_left) override {
    Deadline sent = SteadyClock::now();
    if (!unconfirmed_since_) unconfirmed_since_ = sent;
    redis::Acks acks;
    acks.about = "semaphore '" + sem_.name_ + "'";
    acks.judged_by_reply = after_queueing(mode);
    using C = redis::contract::sem_acquire;
    const std::string lease = millis_arg(req_.lease), wait_ms = millis_arg(wait_left),
                      count = std::to_string(req_.count), capacity = std::to_string(req_.capacity),
                      claim = millis_arg(kClaimWindow), ancestry = ancestry_arg(sem_.ancestry_);
    auto reply =
        run_sem_script(sem_.topology_, redis::scripts::sem_acquire, sem_.keys<C>(request_key_),
                       redis::args_of<C>()
                           .set(C::kArgOwner, req_.owner)
                           .set(C::kArgLease, lease)
                           .set(C::kArgMode, mode_word(mode))
                           .set(C::kArgWaitMs, wait_ms)
                           .set(C::kArgRequestId, id_)
                           .set(C::kArgCount, count)
                           .set(C::kArgCapacity, capacity)
                           .set(C::kArgResize, req_.resize ? "1" : "0")
                           .set(C::kArgChannel, sem_.channel_)
                           .set(C::kArgClaimMs, claim)
                           .set(C::kArgArrival, arrival_)
                           .set(C::kArgAncestry, ancestry)
                           .set(C::kArgNote, sem_.note_)
                           .strings(),
                       sem_.name_, redis::Retry::kIdempotent, &acks, mode);
    long long status = reply.at(0).integer();
    if (status == 1) {
      // The wait gives back what this request took (give_up) on the way out.
      require_acks(acks, "the permits it took were given back");
      PermitsHeld h;
      h.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
      h.lease = Millis(reply.at(1).integer());
      h.ids = strings_from(reply, 2);
      h.request_id = id_;
      h.deadline = std::min(sent, *unconfirmed_since_) + h.lease;
      result_ = h;
      return {true, Millis(0), {}, {}, -1};
    }
    unconfirmed_since_.reset();
    PermitsBusy b;
    if (status == -1) {
      result_ = b;
      return {false, Millis(-1), {}, {}, -1};
    }
    b.next_expiry = Millis(reply.at(1).integer());
    long long arrival = reply.at(2).integer();
    if (arrival > 0) arrival_ = std::to_string(arrival);
    b.in_use = reply.at(3).integer();
    b.capacity = reply.at(4).integer();
    result_ = b;
    std::string in_use =
        std::to_string(b.in_use) + " of " + std::to_string(b.capacity) + " permits in use";
    const bool queued = mode != Mode::kTry && mode != Mode::kLast;
    return {false, b.next_expiry, in_use, in_use, queued ? reply.at(5).integer() : -1};
  }

  std::vector<std::string> channels() const override {
    return {sem_.channel_, sem_.layout_.sem_grant_channel(sem_.name_, id_)};
  }

  void give_up() noexcept override {
    // No reply record for a clean-up: the record's life is a placeholder.
    using C = redis::contract::sem_release;
    const std::string claim = millis_arg(kClaimWindow);
    clean_up(sem_.topology_, redis::scripts::sem_release, sem_.keys<C>(request_key_),
             redis::args_of<C>()
                 .set(C::kArgChannel, sem_.channel_)
                 .set(C::kArgClaimMs, claim)
                 .set(C::kArgMode, "abandon")
                 .set(C::kArgKeepMs, "0")
                 .set(C::kArgReplyTtl, "0")
                 .add_rest({member_})
                 .strings());
  }

  PermitAcquisition result() const { return result_; }

 private:
  Semaphore& sem_;
  PermitRequest req_;
  std::string id_;
  std::string request_key_;
  std::string member_;
  std::string arrival_;
  std::optional<Deadline> unconfirmed_since_;
  PermitAcquisition result_ = PermitsBusy{};
};

// All permits of one acquisition, renewed and released together.
class PermitHold : public Hold {
 public:
  PermitHold(Semaphore& sem, const PermitsHeld& held, Millis lease)
      : Hold(lease, 0, held.deadline),
        sem_(sem),
        ids_(held.ids),
        request_key_(sem.layout_.sem_request_key(sem.name_, held.request_id)) {}

  Renewed renew() override {
    Deadline sent = SteadyClock::now();
    auto missing = sem_.renew(ids_, lease_);
    if (missing.empty()) {
      deadline_ = sent + lease_;
      return Renewed::kHeld;
    }
    reason_ = "permit " + missing.front() + " of semaphore '" + sem_.name() +
              "' is no longer held (expired or released)";
    return Renewed::kLost;
  }

  Released release(Millis keep) override {
    auto reply = sem_.release_script(request_key_, "hold", keep, ids_);
    long long released = reply.at(0).integer();
    if (released == -1 || released == static_cast<long long>(ids_.size()))
      return Released::kReleased;
    reason_ = std::to_string(ids_.size() - static_cast<size_t>(std::max(released, 0LL))) +
              " of its permits were no longer held (expired or released)";
    return Released::kNotHeld;
  }

  std::string lost_reason() const override { return reason_; }

 private:
  Semaphore& sem_;
  std::vector<std::string> ids_;
  std::string request_key_;
  std::string reason_;
};

Semaphore::Semaphore(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      layout_(layout),
      name_(std::move(name)),
      key_(layout.sem_key(name_)),
      config_key_(layout.sem_config_key(name_)),
      holders_key_(layout.sem_holders_key(name_)),
      waiters_key_(layout.sem_waiters_key(name_)),
      timeouts_key_(layout.sem_timeouts_key(name_)),
      grants_key_(layout.sem_grants_key(name_)),
      lock_key_(layout.lock_key(name_)),
      lock_readers_key_(layout.readers_key(name_)),
      notes_key_(layout.sem_notes_key(name_)),
      channel_(layout.sem_channel(name_)) {}

template <class Contract>
std::vector<std::string_view> Semaphore::keys(const std::string& request_key,
                                              const std::string& reply_key) const {
  using C = Contract;
  redis::ScriptArgs k = redis::keys_of<C>();
  k.set(C::kKeyPermits, key_)
      .set(C::kKeyConfig, config_key_)
      .set(C::kKeyHolders, holders_key_)
      .set(C::kKeyWaiters, waiters_key_)
      .set(C::kKeyTimeouts, timeouts_key_)
      .set(C::kKeyGrants, grants_key_)
      .set(C::kKeyRequest, request_key)
      .set(C::kKeyLock, lock_key_)
      .set(C::kKeyLockReaders, lock_readers_key_)
      .set(C::kKeyNotes, notes_key_);
  if constexpr (requires { C::kKeyReply; }) {
    if (!reply_key.empty()) k.set(C::kKeyReply, reply_key);
  }
  return k.list();
}

PermitAcquisition Semaphore::acquire(const PermitRequest& req, Deadline until,
                                     const WaitHooks& hooks) {
  if (redisson_) return redisson_->acquire(req, until, hooks);
  PermitWait wait(*this, req);
  WaitOutcome outcome;
  try {
    outcome = wait_for(topology_, wait, until, hooks);
  } catch (const redis::ReplyError& e) {
    if (e.code() != "SELF") throw;
    throw waits_for_itself(e.reply(), req.count);
  }
  PermitAcquisition a = wait.result();
  return permit_outcome(outcome, std::move(a));
}

PermitAcquisition permit_outcome(WaitOutcome outcome, PermitAcquisition a) {
  if (outcome != WaitOutcome::kInterrupted) return a;
  PermitsBusy b = std::holds_alternative<PermitsBusy>(a) ? std::get<PermitsBusy>(a) : PermitsBusy{};
  b.interrupted = true;
  return b;
}

// "SELF <held> <capacity> <hold id>" from sem_acquire.lua.
DataError Semaphore::waits_for_itself(const std::string& reply, long long count) const {
  std::istringstream in(reply.substr(reply.find(' ') + 1));
  std::string held, capacity, id;
  in >> held >> capacity >> id;
  const AncestorHold* a = find_ancestor(ancestry_, id);
  return DataError(
      "semaphore '" + name_ + "': the rlock sem exec this command runs under holds " + held +
      " of its " + capacity + " permits (hold " + id +
      (a ? ", owner '" + a->owner + "'" : std::string()) + "), and " + std::to_string(count) +
      " more (or those of a waiter queued ahead) can only come after it releases them: this "
      "request would wait for itself, so it is refused and nothing changed");
}

redis::Reply Semaphore::release_script(const std::string& request_key, std::string_view mode,
                                       Millis keep, const std::vector<std::string>& values) {
  using C = redis::contract::sem_release;
  std::string reply_key = layout_.reply_key(name_, random_hex(16));
  const std::string claim = millis_arg(kClaimWindow), keep_ms = millis_arg(keep),
                    ttl = reply_record_ttl_arg(topology_);
  YieldToServer yield;  // permits may go to waiters with the reply
  return run_sem_script(topology_, redis::scripts::sem_release, keys<C>(request_key, reply_key),
                        redis::args_of<C>()
                            .set(C::kArgChannel, channel_)
                            .set(C::kArgClaimMs, claim)
                            .set(C::kArgMode, mode)
                            .set(C::kArgKeepMs, keep_ms)
                            .set(C::kArgReplyTtl, ttl)
                            .add_rest(views(values))
                            .strings(),
                        name_, redis::Retry::kIdempotent);
}

void Semaphore::use_redisson(bool plain) {
  redisson_ = std::make_shared<RedissonSemaphore>(topology_, name_, layout_.prefix(), plain);
}

PermitRelease Semaphore::release(const std::vector<std::string>& ids) {
  if (redisson_) return redisson_->release(ids);
  auto reply = release_script(layout_.sem_request_key(name_, "-"), "release", Millis(0), ids);
  PermitRelease r;
  r.released = reply.at(0).integer();
  r.not_held = strings_from(reply, 1);
  return r;
}

std::vector<PermitInfo> Semaphore::force_release() {
  if (redisson_) return redisson_->force_release();
  auto reply = release_script(layout_.sem_request_key(name_, "-"), "force", Millis(0), {});
  std::vector<PermitInfo> freed;
  for (size_t i = 1; i + 1 < reply.size(); i += 2)
    freed.push_back({reply.at(i).str(), reply.at(i + 1).str(), Millis(0)});
  return freed;
}

std::vector<std::string> Semaphore::renew(const std::vector<std::string>& ids, Millis lease) {
  if (redisson_) return redisson_->renew(ids, lease);
  using C = redis::contract::sem_renew;
  const std::string lease_ms = millis_arg(lease);
  redis::Acks acks;
  acks.about = "semaphore '" + name_ + "'";
  auto reply = run_sem_script(topology_, redis::scripts::sem_renew,
                              keys<C>(layout_.sem_request_key(name_, "-")),
                              redis::args_of<C>()
                                  .set(C::kArgChannel, channel_)
                                  .set(C::kArgLease, lease_ms)
                                  .add_rest(views(ids))
                                  .strings(),
                              name_, redis::Retry::kIdempotent, &acks);
  if (reply.at(0).integer() == 1) {
    require_acks(acks,
                 "the renewal does not count (the permits may be lost at their old deadline)");
    return {};
  }
  return strings_from(reply, 1);
}

std::unique_ptr<Hold> Semaphore::hold(const PermitsHeld& held, Millis lease) {
  if (redisson_) return redisson_->hold(held, lease);
  return std::make_unique<PermitHold>(*this, held, lease);
}

std::vector<std::string> semaphore_keys(const KeyLayout& layout, const std::string& name) {
  using C = redis::contract::sem_status;
  const std::string permits = layout.sem_key(name), config = layout.sem_config_key(name),
                    holders = layout.sem_holders_key(name), waiters = layout.sem_waiters_key(name),
                    timeouts = layout.sem_timeouts_key(name), grants = layout.sem_grants_key(name),
                    request = layout.sem_request_key(name, "-"), lock = layout.lock_key(name);
  return redis::keys_of<C>()
      .set(C::kKeyPermits, permits)
      .set(C::kKeyConfig, config)
      .set(C::kKeyHolders, holders)
      .set(C::kKeyWaiters, waiters)
      .set(C::kKeyTimeouts, timeouts)
      .set(C::kKeyGrants, grants)
      .set(C::kKeyRequest, request)
      .set(C::kKeyLock, lock)
      .strings();
}

SemaphoreState read_semaphore(redis::Topology& topology, const KeyLayout& layout,
                              const std::string& name, const SemaphorePage& page) {
  using C = redis::contract::sem_status;
  auto keys = semaphore_keys(layout, name);
  const std::string permits_from = std::to_string(page.permits_from),
                    waiters_from = std::to_string(page.waiters_from),
                    limit = std::to_string(page.limit);
  auto reply = run_object_script(topology, redis::scripts::sem_status, views(keys),
                                 redis::args_of<C>()
                                     .set(C::kArgPermitsFrom, permits_from)
                                     .set(C::kArgWaitersFrom, waiters_from)
                                     .set(C::kArgLimit, limit)
                                     .list(),
                                 kKind, redis::Retry::kIdempotent);
  // A score or arrival another program stored out of range is malformed, never wrapped.
  auto whole = [&](const redis::ReplyView& r) {
    long long v = 0;
    if (!parse_stored_whole(r.str(), v)) {
      throw DataError("semaphore '" + name + "' is malformed: '" + r.str() +
                      "' where rlock stores a whole number; rlock will not overwrite it");
    }
    return v;
  };
  SemaphoreState s;
  s.capacity = reply.at(0).integer();
  const long long now_ms = reply.at(1).integer();
  s.permits_total = reply.at(2).integer();
  s.next_permits_from = reply.at(3).integer();
  if (reply.at(4).str() != "-1") s.last_lease = Millis(std::max(whole(reply.at(4)) - now_ms, 0LL));
  s.waiters_total = reply.at(5).integer();
  s.next_waiters_from = reply.at(6).integer();
  s.reserved = reply.at(7).integer();
  size_t i = 8;
  long long n = reply.at(i++).integer();
  for (long long k = 0; k < n; ++k, i += 3) {
    s.permits.push_back({reply.at(i).str(), reply.at(i + 1).str(),
                         Millis(std::max(whole(reply.at(i + 2)) - now_ms, 0LL))});
  }
  n = reply.at(i++).integer();
  std::vector<PermitWaiter> queued;
  for (long long k = 0; k < n; ++k, i += 2) {
    PermitWaiter w = parse_member(reply.at(i).str());
    w.waited = Millis(std::max(now_ms - whole(reply.at(i + 1)) / 1000, 0LL));
    queued.push_back(w);
  }
  n = reply.at(i++).integer();
  for (long long k = 0; k < n; ++k, ++i) {
    PermitWaiter w = parse_member(reply.at(i).str());
    w.granted = true;
    s.waiters.push_back(w);
  }
  s.waiters.insert(s.waiters.end(), queued.begin(), queued.end());
  return s;
}

}  // namespace rlock::prim
