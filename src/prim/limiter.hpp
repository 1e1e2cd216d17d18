#pragma once

#include <chrono>
#include <string>
#include <variant>

#include "prim/key_layout.hpp"
#include "redis/topology.hpp"

namespace rlock::prim {

using Micros = std::chrono::microseconds;

// What a limiter is configured with; stored with it at the first decision.
struct LimiterConfig {
  long long rate = 1;         // calls of cost 1 per `per`, >= 1
  long long per_ms = 1000;    // >= 1
  long long burst = 1;        // calls of cost 1 that pass at once from idle, >= 1
  bool per_client = false;    // a bucket per client (--client)
  long long client_rate = 0;  // per_client and >= 1: each client's rate beside the overall
                              // rate; 0: each client at `rate`, no overall bucket
  bool operator==(const LimiterConfig&) const = default;
};

struct LimitRequest {
  LimiterConfig config;
  long long cost = 1;        // 1..config.burst
  std::string client;        // required iff config.per_client
  bool peek = false;         // decide without consuming (writes nothing)
  bool reconfigure = false;  // store `config` over a different one, converting the state
};

// One decision, on the server clock.
struct LimitDecision {
  bool allowed = false;
  long long remaining = 0;  // calls of cost 1 that would pass right after this decision
  Micros retry_after{0};    // limited: when this request would pass; allowed: 0
  Micros reset_after{0};    // when every bucket used is full again (the keys expire then)
  long long now_ms = 0;     // server time of the decision
};

// The limiter has another config; nothing was changed.
struct ConfigMismatch {
  LimiterConfig stored;
};

using LimitOutcome = std::variant<LimitDecision, ConfigMismatch>;

// What `reset` cleared.
struct LimitReset {
  bool existed = false;
  long long client_buckets = 0;
};

// A rate limiter (GCRA over the Redis server's clock): one round trip and O(1) state per
// bucket, an overall bucket and/or one per client (Redisson's RRateLimiter OVERALL and
// PER_CLIENT, without its sliding log and client clocks). Every decision is one script.
class Limiter {
 public:
  Limiter(redis::Topology& topology, const KeyLayout& layout, std::string name);

  // Decides (and unless `peek`, consumes `cost` from every bucket the config uses, or from
  // none). Throws DataError (a key of another type), UnavailableError, Error(77).
  LimitOutcome decide(const LimitRequest& request);

  // Clears the config and all buckets.
  LimitReset reset();

  const std::string& name() const { return name_; }

 private:
  redis::Topology& topology_;
  std::string name_;
  std::string key_, clients_key_;
  std::string reply_key_prefix_;  // + a request id: KeyLayout::reply_key
};

}  // namespace rlock::prim
