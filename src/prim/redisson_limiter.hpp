#pragma once

#include <string>

#include "prim/limiter.hpp"
#include "prim/redisson_layout.hpp"
#include "redis/topology.hpp"

namespace rlock::prim {

// Redisson's RRateLimiter (`limit` under --layout redisson), so that a batch script and a
// Java service's RRateLimiter of the same name share one rate: the config hash under the
// bare name (rate, interval, type 0 OVERALL | 1 PER_CLIENT, keepAliveTime), a sliding log
// of the permits taken in "{name}:permits" (zset, each member Redisson's struct-packed
// random bytes and permit count, scored by the ms it was taken) and the permits left in
// "{name}:value"; PER_CLIENT keeps both per client ("{name}:value:<client>", where Redisson's
// client is its instance's id). Where Redisson stamps a permit with the client's clock,
// rlock stamps it with the server's (TIME): see docs/redisson.md for what that means to a
// Java client beside it. A request's config maps as: rate -> rate, per_ms -> interval,
// per_client -> PER_CLIENT with request.client; burst and client_rate have no Redisson form
// (the command refuses them).
class RedissonLimiter {
 public:
  RedissonLimiter(redis::Topology& topology, const RedissonLayout& layout, std::string name);

  // trySetRate when the name has no config, then tryAcquire(cost) (or, with `peek`, what it
  // would say, writing nothing). A stored config of another rate, interval or type is a
  // ConfigMismatch unless `reconfigure` (Redisson's setRate keeping the permits taken).
  // Throws DataError (the name is another object), UnavailableError, Error(77).
  LimitOutcome decide(const LimitRequest& request);

  // What RedissonRateLimiter.delete() removes: config, OVERALL value and log, and those of
  // `client` when given. client_buckets: 1 when the client's keys existed.
  LimitReset reset(const std::string& client);

  const std::string& name() const { return name_; }

 private:
  std::string value_key(const std::string& client) const;
  std::string permits_key(const std::string& client) const;

  redis::Topology& topology_;
  const RedissonLayout& layout_;
  std::string name_;
};

}  // namespace rlock::prim
