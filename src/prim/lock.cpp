#include "prim/lock.hpp"

#include <algorithm>
#include <cstdio>

#include "prim/object_script.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/subscriber.hpp"
#include "util/error.hpp"
#include "util/owner.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "lock";

// A waiter woken by the lease running out retries a little after it, so that the key has
// really expired on the server when it asks.
constexpr Millis kExpirySlack{2};

// The waiters' queue outlives the longest wait in it by this much; dead entries go with it.
constexpr Millis kQueueMargin{1000};

}  // namespace

std::vector<Holder> decode_holders(const redisReply* r, size_t first, const std::string& key) {
  std::vector<Holder> holders;
  for (size_t i = first; i + 1 < r->elements; i += 2) {
    std::string owner = redis::as_string(r->element[i]);
    try {
      holders.push_back({owner, redis::as_integer(r->element[i + 1])});
    } catch (const DataError&) {
      throw DataError("key '" + key + "' holds a hash that is not a lock (field '" + owner +
                      "' is not a reentry count); rlock will not overwrite it");
    }
  }
  return holders;
}

Lock::Lock(redis::Connection& conn, const KeyLayout& layout, std::string name)
    : conn_(conn),
      layout_(layout),
      name_(std::move(name)),
      key_(layout.lock_key(name_)),
      fence_key_(layout.fence_key(name_)),
      waiters_key_(layout.waiters_key(name_)),
      channel_(layout.lock_channel(name_)) {}

Acquisition Lock::attempt(const std::string& owner, Millis lease, const char* mode, Millis wait_left,
                          const std::string& wait_id) {
  std::string lease_ms = std::to_string(lease.count());
  std::string queue_ms = std::to_string(wait_left.count() + kQueueMargin.count());
  Acquisition a;
  a.sent_at = SteadyClock::now();
  auto reply = run_object_script(conn_, redis::scripts::lock_acquire, {key_, fence_key_, waiters_key_},
                                 {owner, lease_ms, mode, queue_ms, wait_id}, kKind);
  a.known_at = SteadyClock::now();
  a.acquired = redis::as_integer(redis::element(reply.get(), 0)) == 1;
  if (a.acquired) {
    a.count = redis::as_integer(redis::element(reply.get(), 1));
    a.fence = redis::as_integer(redis::element(reply.get(), 2));
    a.lease = Millis(redis::as_integer(redis::element(reply.get(), 3)));
  } else {
    a.ttl = Millis(redis::as_integer(redis::element(reply.get(), 1)));
    a.holders = decode_holders(reply.get(), 2, key_);
  }
  return a;
}

Acquisition Lock::try_acquire(const std::string& owner, Millis lease) {
  return attempt(owner, lease, "try", Millis(0), "-");
}

Acquisition Lock::cancel_wait(const std::string& owner, Millis lease, const std::string& wait_id,
                              Acquisition busy) {
  std::string lease_ms = std::to_string(lease.count());
  auto reply = run_object_script(conn_, redis::scripts::lock_cancel_wait, {key_, fence_key_, waiters_key_},
                                 {owner, lease_ms, wait_id}, kKind);
  if (redis::as_integer(redis::element(reply.get(), 0)) != 1) return busy;
  busy.acquired = true;
  busy.count = redis::as_integer(redis::element(reply.get(), 1));
  busy.fence = redis::as_integer(redis::element(reply.get(), 2));
  busy.lease = lease;
  busy.known_at = SteadyClock::now();
  busy.holders.clear();
  return busy;
}

// "granted <fence> <lease_ms>" on the wait's own channel.
static bool parse_grant(const std::string& payload, Acquisition& a) {
  long long fence = 0, lease = 0;
  if (std::sscanf(payload.c_str(), "granted %lld %lld", &fence, &lease) != 2) return false;
  a.acquired = true;
  a.count = 1;
  a.fence = fence;
  a.lease = Millis(lease);
  a.known_at = SteadyClock::now();
  a.holders.clear();
  return true;
}

Acquisition Lock::acquire(const std::string& owner, Millis lease, Deadline until,
                          const WaitHooks& hooks) {
  Acquisition a = try_acquire(owner, lease);
  if (a.acquired || SteadyClock::now() >= until) return a;
  // Subscribe before queueing, so that neither a release nor a grant can be missed.
  std::string wait_id = random_hex(8);
  std::string grant_channel = layout_.grant_channel(name_, wait_id);
  auto sub = redis::Subscriber::open(conn_.options(), {channel_, grant_channel});
  // A grant is made after the previous attempt was sent: its lease runs from there at the
  // latest, which keeps the caller's lease deadline on the safe side.
  Deadline lease_start = a.sent_at;
  const char* mode = "wait";
  while (true) {
    a = attempt(owner, lease, mode, millis_until(until), wait_id);
    mode = "queued";
    std::swap(a.sent_at, lease_start);  // acquired: the earlier bound; busy: remember this one
    if (a.acquired) return a;
    if (SteadyClock::now() >= until) return cancel_wait(owner, lease, wait_id, a);
    if (hooks.on_wait) hooks.on_wait(a, millis_until(until));
    Deadline wake = until;
    if (a.ttl.count() >= 0) wake = std::min(until, SteadyClock::now() + a.ttl + kExpirySlack);
    auto event = sub.wait(wake, hooks.interrupt_fd);
    if (event.wake == redis::Subscriber::Wake::kInterrupted) {
      if (cancel_wait(owner, lease, wait_id, a).acquired) release(owner);
      a.interrupted = true;
      return a;
    }
    if (event.wake == redis::Subscriber::Wake::kMessage && event.channel == grant_channel &&
        parse_grant(event.payload, a)) {
      a.sent_at = lease_start;
      return a;
    }
  }
}

Release Lock::release(const std::string& owner, Millis keep) {
  std::string keep_ms = std::to_string(std::max<long long>(keep.count(), 0));
  auto reply = run_object_script(conn_, redis::scripts::lock_release, {key_, fence_key_, waiters_key_},
                                 {owner, channel_, keep_ms}, kKind);
  Release r;
  r.held = redis::as_integer(redis::element(reply.get(), 0)) == 1;
  if (r.held) {
    r.remaining = redis::as_integer(redis::element(reply.get(), 1));
  } else {
    r.holders = decode_holders(reply.get(), 1, key_);
  }
  return r;
}

std::vector<Holder> Lock::force_release() {
  auto reply = run_object_script(conn_, redis::scripts::lock_force_release, {key_}, {channel_}, kKind);
  return decode_holders(reply.get(), 0, key_);
}

bool Lock::renew(const std::string& owner, Millis lease) {
  std::string lease_ms = std::to_string(lease.count());
  auto reply = redis::run_script(conn_, redis::scripts::lock_renew, {key_}, {owner, lease_ms});
  return redis::as_integer(reply.get()) == 1;
}

}  // namespace rlock::prim
