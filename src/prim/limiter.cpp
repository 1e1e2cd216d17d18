#include "prim/limiter.hpp"

#include "prim/object_script.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/owner.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "rate limiter";

}  // namespace

Limiter::Limiter(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      name_(std::move(name)),
      key_(layout.limiter_key(name_)),
      clients_key_(layout.limiter_clients_key(name_)),
      reply_key_prefix_(layout.reply_key(name_, "")) {}

LimitOutcome Limiter::decide(const LimitRequest& r) {
  const LimiterConfig& c = r.config;
  std::string rate = std::to_string(c.rate), per = std::to_string(c.per_ms),
              burst = std::to_string(c.burst), client_rate = std::to_string(c.client_rate),
              cost = std::to_string(r.cost);
  // A consuming decision repeated after a lost reply gets the first decision back (its
  // reply record); a peek writes nothing, not even that.
  std::string reply_key = reply_key_prefix_ + random_hex(16);
  std::string ttl = reply_record_ttl_arg(topology_);
  using C = redis::contract::limit_decide;
  redis::ScriptArgs keys = redis::keys_of<C>();
  keys.set(C::kKeyLimiter, key_).set(C::kKeyClients, clients_key_);
  if (!r.peek) keys.set(C::kKeyReply, reply_key);
  auto reply = run_object_script(
      topology_, redis::scripts::limit_decide, keys.list(),
      redis::args_of<C>()
          .set(C::kArgRate, rate)
          .set(C::kArgPerMs, per)
          .set(C::kArgBurst, burst)
          .set(C::kArgPerClient, c.per_client ? "1" : "0")
          .set(C::kArgClientRate, client_rate)
          .set(C::kArgCost, cost)
          .set(C::kArgClient, c.per_client ? std::string_view(r.client) : std::string_view())
          .set(C::kArgPeek, r.peek ? "1" : "0")
          .set(C::kArgReconfigure, r.reconfigure ? "1" : "0")
          .set(C::kArgReplyTtl, ttl)
          .list(),
      kKind, redis::Retry::kIdempotent);
  if (reply.at(0).integer() == 0) {
    ConfigMismatch m;
    m.stored = {reply.at(1).integer(), reply.at(2).integer(), reply.at(3).integer(),
                reply.at(4).integer() == 1, reply.at(5).integer()};
    return m;
  }
  LimitDecision d;
  d.allowed = reply.at(1).integer() == 1;
  d.remaining = reply.at(2).integer();
  d.retry_after = Micros(reply.at(3).integer());
  d.reset_after = Micros(reply.at(4).integer());
  d.now_ms = reply.at(5).integer() / 1000;
  return d;
}

LimitReset Limiter::reset() {
  std::string reply_key = reply_key_prefix_ + random_hex(16);
  using C = redis::contract::limit_reset;
  const std::string ttl = reply_record_ttl_arg(topology_);
  auto reply = run_object_script(topology_, redis::scripts::limit_reset,
                                 redis::keys_of<C>()
                                     .set(C::kKeyLimiter, key_)
                                     .set(C::kKeyClients, clients_key_)
                                     .set(C::kKeyReply, reply_key)
                                     .list(),
                                 redis::args_of<C>().set(C::kArgReplyTtl, ttl).list(), kKind,
                                 redis::Retry::kIdempotent);
  return {reply.at(0).integer() == 1, reply.at(1).integer()};
}

}  // namespace rlock::prim
