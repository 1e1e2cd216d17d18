// Redisson's RSemaphore (--redisson-object semaphore): the bare name's free count and
// nothing else, its permits anonymous and without expiry. `sem exec` gives back what it
// took when its job ends; `sem acquire` and `sem release` are Java's acquire and release
// (anyone may release). A killed rlock never gives them back, as a killed Java client does
// not. No lease is claimed: nothing on the server can take the permits from the holder, so
// its job is never stopped for one (a stopped rlock keeps them, and its job runs on).
#include <algorithm>

#include "prim/object_script.hpp"
#include "prim/redisson_semaphore.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/owner.hpp"
#include "util/yield_to_server.hpp"

namespace rlock::prim {
namespace {

// Until when an RSemaphore's permits are certainly still the holder's: nothing on the
// server takes them back, so exec's guardian never stops the job for a lease.
Deadline never_expires() { return SteadyClock::now() + std::chrono::hours(24 * 365 * 100); }

}  // namespace

// One acquisition: its reply record (the same in every attempt) makes a repeat after a lost
// reply take nothing twice, and tells the give-up whether the permits were taken.
class RedissonPlainWait : public Waitable {
 public:
  RedissonPlainWait(RedissonSemaphore& sem, const PermitRequest& req)
      : sem_(sem),
        req_(req),
        id_(random_hex(8)),
        reply_key_(sem.layout_.reply_key(sem.name_, id_)) {}

  Step attempt(Mode /*mode*/, Millis /*wait_left*/) override {
    using C = redis::contract::redisson_rsem_acquire;
    const std::string ttl = reply_record_ttl_arg(sem_.topology_);
    auto reply = sem_.run_plain(redis::scripts::redisson_rsem_acquire, {sem_.key_, reply_key_},
                                redis::args_of<C>()
                                    .set(C::kArgChannel, sem_.channel_)
                                    .set(C::kArgCount, std::to_string(req_.count))
                                    .set(C::kArgCapacity, std::to_string(req_.capacity))
                                    .set(C::kArgReplyTtl, ttl)
                                    .strings());
    free_ = reply.at(1).integer();
    if (reply.at(0).integer() == 1) {
      PermitsHeld h;
      h.lease = req_.lease;
      h.request_id = id_;
      h.deadline = never_expires();
      result_ = h;
      return {true, Millis(0), {}, {}, -1};
    }
    PermitsBusy b;
    b.capacity = req_.capacity;
    b.in_use = std::max(req_.capacity - free_, 0LL);
    result_ = b;
    const std::string line = std::to_string(free_) + " permits free (Redisson's count), " +
                             std::to_string(req_.count) + " wanted";
    return {false, Millis(-1), line, line, -1};
  }

  std::vector<std::string> channels() const override { return {sem_.channel_}; }
  std::vector<std::string> classic_channels() const override { return {sem_.channel_}; }

  void give_up() noexcept override {
    using C = redis::contract::redisson_rsem_release;
    clean_up(sem_.topology_, redis::scripts::redisson_rsem_release, {sem_.key_, reply_key_},
             redis::args_of<C>()
                 .set(C::kArgChannel, sem_.channel_)
                 .set(C::kArgCount, std::to_string(req_.count))
                 .set(C::kArgAbandon, "1")
                 .set(C::kArgReplyTtl, "0")
                 .strings());
  }

  PermitAcquisition result() const { return result_; }
  long long free() const { return free_; }

 private:
  RedissonSemaphore& sem_;
  PermitRequest req_;
  std::string id_;
  std::string reply_key_;
  PermitAcquisition result_ = PermitsBusy{};
  long long free_ = 0;
};

// The permits of one acquisition: nothing to renew (they never expire), given back once.
class RedissonPlainHold : public Hold {
 public:
  RedissonPlainHold(RedissonSemaphore& sem, const PermitsHeld& held, Millis lease)
      : Hold(lease, 0, held.deadline),
        sem_(sem),
        count_(held.count),
        taken_key_(sem.layout_.reply_key(sem.name_, held.request_id)) {}

  Renewed renew() override {
    deadline_ = never_expires();
    return Renewed::kHeld;
  }

  // Were the job stopped as lost all the same, the permits would stay taken for good.
  void give_back_rest() noexcept override {
    try {
      release(Millis(0));
    } catch (const std::exception&) {  // taken for good, as after a killed Java client
    }
  }

  Released release(Millis /*keep*/) override {
    sem_.release_plain(count_, taken_key_);
    return Released::kReleased;
  }

  std::string lost_reason() const override { return {}; }

 private:
  RedissonSemaphore& sem_;
  long long count_;
  std::string taken_key_;
};

std::unique_ptr<Hold> make_plain_hold(RedissonSemaphore& sem, const PermitsHeld& held,
                                      Millis lease) {
  return std::make_unique<RedissonPlainHold>(sem, held, lease);
}

redis::Reply RedissonSemaphore::run_plain(const redis::Script& script,
                                          const std::vector<std::string_view>& keys,
                                          const std::vector<std::string>& args) {
  const std::vector<std::string_view> argv(args.begin(), args.end());
  return run_object_script(topology_, script, keys, argv, "semaphore", redis::Retry::kIdempotent);
}

redis::Reply RedissonSemaphore::release_plain(long long count, const std::string& taken) {
  using C = redis::contract::redisson_rsem_release;
  const std::string ttl = reply_record_ttl_arg(topology_),
                    reply_key = layout_.reply_key(name_, random_hex(16));
  YieldToServer yield;  // a waiter takes the permits as soon as it hears
  return run_plain(redis::scripts::redisson_rsem_release, {key_, taken, reply_key},
                   redis::args_of<C>()
                       .set(C::kArgChannel, channel_)
                       .set(C::kArgCount, std::to_string(count))
                       .set(C::kArgAbandon, "0")
                       .set(C::kArgReplyTtl, ttl)
                       .strings());
}

AnonymousPermits RedissonSemaphore::take_anonymous(long long count, long long capacity,
                                                   Deadline until, const WaitHooks& hooks) {
  PermitRequest req;
  req.count = count;
  req.capacity = capacity;
  RedissonPlainWait wait(*this, req);
  const WaitOutcome outcome = wait_for(topology_, wait, until, hooks);
  AnonymousPermits a;
  a.taken = outcome == WaitOutcome::kAcquired;
  a.interrupted = outcome == WaitOutcome::kInterrupted;
  a.free = wait.free();
  return a;
}

long long RedissonSemaphore::give_anonymous(long long count) {
  // No acquisition's record to remove: a key of the name's slot that nothing writes.
  return release_plain(count, layout_.reply_key(name_, random_hex(16))).at(1).integer();
}

std::optional<long long> RedissonSemaphore::free_anonymous() {
  auto reply = run_plain(redis::scripts::redisson_rsem_status, {key_}, {});
  if (reply.at(0).integer() == 0) return std::nullopt;
  return reply.at(1).integer();
}

PermitAcquisition RedissonSemaphore::acquire_plain(const PermitRequest& req, Deadline until,
                                                   const WaitHooks& hooks) {
  RedissonPlainWait wait(*this, req);
  const WaitOutcome outcome = wait_for(topology_, wait, until, hooks);
  PermitAcquisition a = wait.result();
  if (auto* held = std::get_if<PermitsHeld>(&a)) held->count = req.count;
  return permit_outcome(outcome, std::move(a));
}

}  // namespace rlock::prim
