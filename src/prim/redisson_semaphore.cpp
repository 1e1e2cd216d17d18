#include "prim/redisson_semaphore.hpp"

#include <algorithm>

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

constexpr std::string_view kKind = "semaphore";

std::vector<std::string> strings_from(const redis::ReplyView& r, size_t first) {
  std::vector<std::string> out;
  for (size_t i = first; i < r.size(); ++i) out.push_back(r.at(i).str());
  return out;
}

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

void check_redisson_permit_ids(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    const bool hex = std::all_of(id.begin(), id.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
    if (!hex || id.empty() || id.size() % 2 != 0 || id.size() > 256) {
      throw UsageError("--permit '" + id +
                       "' is not a Redisson permit id (an even number of hex digits, such as "
                       "the 32 that sem acquire prints)");
    }
  }
}

// One acquisition: the same ids in every attempt, so that a repeated attempt takes nothing
// twice and the clean-up can give back what a lost reply took.
class RedissonPermitWait : public Waitable {
 public:
  RedissonPermitWait(RedissonSemaphore& sem, const PermitRequest& req) : sem_(sem), req_(req) {
    for (long long i = 0; i < req.count; ++i) ids_.push_back(random_hex(16));
  }

  Step attempt(Mode mode, Millis /*wait_left*/) override {
    const Deadline sent = SteadyClock::now();
    using C = redis::contract::redisson_sem_acquire;
    redis::Acks acks;
    acks.about = "semaphore '" + sem_.name_ + "'";
    acks.judged_by_reply = after_queueing(mode);
    auto reply = sem_.run(redis::scripts::redisson_sem_acquire,
                          redis::args_of<C>()
                              .set(C::kArgChannel, sem_.channel_)
                              .set(C::kArgCount, std::to_string(req_.count))
                              .set(C::kArgLease, millis_arg(req_.lease))
                              .set(C::kArgCapacity, std::to_string(req_.capacity))
                              .set(C::kArgResize, req_.resize ? "1" : "0")
                              .add_rest(views(ids_))
                              .strings(),
                          &acks);
    if (reply.at(0).integer() == 1) {
      require_acks(acks, "the permits it took were given back");
      PermitsHeld h;
      h.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
      h.lease = Millis(reply.at(1).integer());
      h.ids = strings_from(reply, 2);
      h.request_id = ids_.front();
      h.deadline = sent + h.lease - sem_.topology_.drift(h.lease);
      result_ = h;
      return {true, Millis(0), {}, {}, -1};
    }
    PermitsBusy b;
    b.next_expiry = Millis(reply.at(1).integer());
    b.in_use = reply.at(2).integer();
    b.capacity = reply.at(3).integer();
    result_ = b;
    const std::string in_use =
        std::to_string(b.in_use) + " of " + std::to_string(b.capacity) + " permits in use";
    Step step{false, b.next_expiry, in_use, in_use, -1};
    return step;
  }

  // Redisson's waiters and releases use the one channel: PUBLISH, or SPUBLISH in its
  // sharded mode (rlock's scripts do both).
  std::vector<std::string> channels() const override { return {sem_.channel_}; }
  std::vector<std::string> classic_channels() const override { return {sem_.channel_}; }

  void give_up() noexcept override {
    using C = redis::contract::redisson_sem_release;
    clean_up(sem_.topology_, redis::scripts::redisson_sem_release,
             redis::keys_of<C>()
                 .set(C::kKeySem, sem_.key_)
                 .set(C::kKeyTimeouts, sem_.timeouts_key_)
                 .list(),
             redis::args_of<C>()
                 .set(C::kArgChannel, sem_.channel_)
                 .set(C::kArgForce, "0")
                 .set(C::kArgReplyTtl, "0")
                 .add_rest(views(ids_))
                 .strings());
  }

  PermitAcquisition result() const { return result_; }

 private:
  RedissonSemaphore& sem_;
  PermitRequest req_;
  std::vector<std::string> ids_;
  PermitAcquisition result_ = PermitsBusy{};
};

// The permits of one acquisition, renewed (updateLeaseTime) and released together.
class RedissonPermitHold : public Hold {
 public:
  RedissonPermitHold(RedissonSemaphore& sem, const PermitsHeld& held, Millis lease,
                     redis::Topology& topology)
      : Hold(lease, 0, held.deadline), sem_(sem), ids_(held.ids), topology_(topology) {}

  Renewed renew() override {
    const Deadline sent = SteadyClock::now();
    auto missing = sem_.renew(ids_, lease_);
    if (missing.empty()) {
      deadline_ = sent + lease_ - topology_.drift(lease_);
      return Renewed::kHeld;
    }
    reason_ = "permit " + missing.front() + " of semaphore '" + sem_.name() +
              "' expired or was released (Redisson's {" + sem_.name() +
              "}:timeout no longer has it)";
    return Renewed::kLost;
  }

  Released release(Millis /*keep*/) override {
    auto r = sem_.release(ids_);
    if (r.not_held.empty()) return Released::kReleased;
    reason_ = std::to_string(r.not_held.size()) +
              " of its permits were no longer held (expired or released)";
    return Released::kNotHeld;
  }

  std::string lost_reason() const override { return reason_; }

 private:
  RedissonSemaphore& sem_;
  std::vector<std::string> ids_;
  redis::Topology& topology_;
  std::string reason_;
};

RedissonSemaphore::RedissonSemaphore(redis::Topology& topology, std::string name,
                                     const std::string& prefix, bool plain)
    : topology_(topology), name_(std::move(name)), layout_(prefix), plain_(plain) {
  layout_.check_name(name_);
  // RedissonObject.suffixName and prefixName for a name without braces.
  key_ = name_;
  timeouts_key_ = "{" + name_ + "}:timeout";
  channel_ = "redisson_sc:{" + name_ + "}";
}

redis::Reply RedissonSemaphore::run(const redis::Script& script,
                                    const std::vector<std::string>& args, redis::Acks* acks,
                                    const std::string& reply_key) {
  std::vector<std::string_view> keys = {key_, timeouts_key_};
  if (!reply_key.empty()) keys.push_back(reply_key);
  try {
    return run_object_script(topology_, script, keys, views(args), kKind, redis::Retry::kIdempotent,
                             acks);
  } catch (const redis::ReplyError& e) {
    if (e.code() != "CAPACITY") throw;
    std::string rest = e.reply().substr(e.reply().find(' ') + 1);
    throw DataError("semaphore '" + name_ + "' has " + rest.substr(0, rest.find(' ')) +
                    " permits in all (Redisson's free count and {" + name_ +
                    "}:timeout), not --permits " + rest.substr(rest.find(' ') + 1) +
                    "; nothing changed (add --resize to set it, as setPermits does)");
  }
}

PermitAcquisition RedissonSemaphore::acquire(const PermitRequest& req, Deadline until,
                                             const WaitHooks& hooks) {
  if (plain_) return acquire_plain(req, until, hooks);
  RedissonPermitWait wait(*this, req);
  const WaitOutcome outcome = wait_for(topology_, wait, until, hooks);
  PermitAcquisition a = wait.result();
  return permit_outcome(outcome, std::move(a));
}

redis::Reply RedissonSemaphore::release_script(bool force, const std::vector<std::string>& ids) {
  using C = redis::contract::redisson_sem_release;
  const std::string ttl = reply_record_ttl_arg(topology_);
  YieldToServer yield;  // a waiter takes the permits as soon as it hears
  return run(redis::scripts::redisson_sem_release,
             redis::args_of<C>()
                 .set(C::kArgChannel, channel_)
                 .set(C::kArgForce, force ? "1" : "0")
                 .set(C::kArgReplyTtl, ttl)
                 .add_rest(views(ids))
                 .strings(),
             nullptr, layout_.reply_key(name_, random_hex(16)));
}

PermitRelease RedissonSemaphore::release(const std::vector<std::string>& ids) {
  auto reply = release_script(false, ids);
  PermitRelease r;
  r.released = reply.at(0).integer();
  r.not_held = strings_from(reply, 1);
  return r;
}

std::vector<PermitInfo> RedissonSemaphore::force_release() {
  auto reply = release_script(true, {});
  std::vector<PermitInfo> freed;
  for (size_t i = 1; i + 1 < reply.size(); i += 2)
    freed.push_back({reply.at(i).str(), "", Millis(reply.at(i + 1).integer())});
  return freed;
}

std::vector<std::string> RedissonSemaphore::renew(const std::vector<std::string>& ids,
                                                  Millis lease) {
  using C = redis::contract::redisson_sem_renew;
  redis::Acks acks;
  acks.about = "semaphore '" + name_ + "'";
  auto reply = run(redis::scripts::redisson_sem_renew,
                   redis::args_of<C>()
                       .set(C::kArgChannel, channel_)
                       .set(C::kArgLease, millis_arg(lease))
                       .add_rest(views(ids))
                       .strings(),
                   &acks);
  if (reply.at(0).integer() == 1) {
    require_acks(acks,
                 "the renewal does not count (the permits may be lost at their old deadline)");
    return {};
  }
  return strings_from(reply, 1);
}

std::unique_ptr<Hold> make_plain_hold(RedissonSemaphore& sem, const PermitsHeld& held,
                                      Millis lease);

std::unique_ptr<Hold> RedissonSemaphore::hold(const PermitsHeld& held, Millis lease) {
  if (plain_) return make_plain_hold(*this, held, lease);
  return std::make_unique<RedissonPermitHold>(*this, held, lease, topology_);
}

SemaphoreState RedissonSemaphore::read(const SemaphorePage& page) {
  using C = redis::contract::redisson_sem_status;
  SemaphoreState s;
  if (page.permits_from < 0) return s;
  const std::vector<std::string_view> keys = {key_, timeouts_key_};
  const std::string from = std::to_string(page.permits_from), limit = std::to_string(page.limit);
  auto reply =
      run_object_script(topology_, redis::scripts::redisson_sem_status, keys,
                        redis::args_of<C>().set(C::kArgFrom, from).set(C::kArgLimit, limit).list(),
                        kKind, redis::Retry::kIdempotent);
  const long long free = reply.at(0).integer(), now_ms = reply.at(1).integer();
  s.permits_total = reply.at(2).integer();
  s.next_permits_from = reply.at(3).integer();
  s.capacity = free < 0 ? 0 : free + s.permits_total;
  for (size_t i = 4; i + 1 < reply.size(); i += 2) {
    const long long expiry = reply.at(i + 1).integer();
    const Millis left(expiry < 0 ? -1 : std::max(expiry - now_ms, 0LL));
    s.permits.push_back({reply.at(i).str(), "", left});
    s.last_lease = std::max(s.last_lease, left);
  }
  return s;
}

}  // namespace rlock::prim
