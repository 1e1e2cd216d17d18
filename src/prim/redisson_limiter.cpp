#include "prim/redisson_limiter.hpp"

#include "prim/object_script.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/owner.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "Redisson RRateLimiter";

// Redisson's getServiceManager().generateIdArray(): 16 random bytes, the permit's identity
// in the log (two permits taken in one ms stay two members).
std::string random_bytes() {
  const std::string hex = random_hex(16);
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

}  // namespace

RedissonLimiter::RedissonLimiter(redis::Topology& topology, const RedissonLayout& layout,
                                 std::string name)
    : topology_(topology), layout_(layout), name_(std::move(name)) {}

// RedissonObject.suffixName: "{name}:value", then suffixName of that with the client id.
std::string RedissonLimiter::value_key(const std::string& client) const {
  std::string key = "{" + name_ + "}:value";
  return client.empty() ? key : key + ":" + client;
}
std::string RedissonLimiter::permits_key(const std::string& client) const {
  std::string key = "{" + name_ + "}:permits";
  return client.empty() ? key : key + ":" + client;
}

LimitOutcome RedissonLimiter::decide(const LimitRequest& r) {
  const LimiterConfig& c = r.config;
  const std::string client = c.per_client ? r.client : std::string();
  const std::string value = value_key(""), client_value = value_key(client),
                    permits = permits_key(""), client_permits = permits_key(client);
  const std::string rate = std::to_string(c.rate), interval = std::to_string(c.per_ms),
                    cost = std::to_string(r.cost), random = random_bytes();
  const std::string reply_key = layout_.reply_key(name_, random_hex(16));
  const std::string ttl = reply_record_ttl_arg(topology_);
  using C = redis::contract::redisson_limit_decide;
  redis::ScriptArgs keys = redis::keys_of<C>();
  keys.set(C::kKeyConfig, name_)
      .set(C::kKeyValue, value)
      .set(C::kKeyClientValue, client_value)
      .set(C::kKeyPermits, permits)
      .set(C::kKeyClientPermits, client_permits);
  if (!r.peek) keys.set(C::kKeyReply, reply_key);
  auto reply = run_object_script(topology_, redis::scripts::redisson_limit_decide, keys.list(),
                                 redis::args_of<C>()
                                     .set(C::kArgRate, rate)
                                     .set(C::kArgInterval, interval)
                                     .set(C::kArgType, c.per_client ? "1" : "0")
                                     .set(C::kArgCost, cost)
                                     .set(C::kArgRandom, random)
                                     .set(C::kArgPeek, r.peek ? "1" : "0")
                                     .set(C::kArgReconfigure, r.reconfigure ? "1" : "0")
                                     .set(C::kArgReplyTtl, ttl)
                                     .list(),
                                 kKind, redis::Retry::kIdempotent);
  if (reply.at(0).integer() == 0) {
    ConfigMismatch m;
    const long long stored_rate = reply.at(1).integer();
    m.stored = {stored_rate, reply.at(2).integer(), stored_rate, reply.at(3).integer() == 1, 0};
    return m;
  }
  LimitDecision d;
  d.allowed = reply.at(1).integer() == 1;
  d.remaining = reply.at(2).integer();
  d.retry_after = std::chrono::milliseconds(reply.at(3).integer());
  d.reset_after = std::chrono::milliseconds(reply.at(4).integer());
  d.now_ms = reply.at(5).integer();
  return d;
}

LimitReset RedissonLimiter::reset(const std::string& client) {
  const std::string value = value_key(""), client_value = value_key(client),
                    permits = permits_key(""), client_permits = permits_key(client);
  const std::string reply_key = layout_.reply_key(name_, random_hex(16));
  const std::string ttl = reply_record_ttl_arg(topology_);
  using C = redis::contract::redisson_limit_reset;
  auto reply = run_object_script(topology_, redis::scripts::redisson_limit_reset,
                                 redis::keys_of<C>()
                                     .set(C::kKeyConfig, name_)
                                     .set(C::kKeyValue, value)
                                     .set(C::kKeyClientValue, client_value)
                                     .set(C::kKeyPermits, permits)
                                     .set(C::kKeyClientPermits, client_permits)
                                     .set(C::kKeyReply, reply_key)
                                     .list(),
                                 redis::args_of<C>().set(C::kArgReplyTtl, ttl).list(), kKind,
                                 redis::Retry::kIdempotent);
  return {reply.at(0).integer() == 1, reply.at(1).integer()};
}

}  // namespace rlock::prim
