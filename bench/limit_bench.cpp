// bench/limit_bench.cpp - rate-limiter decisions per second on one connection, through the
// same Topology and script as `rlock limit` (sequential round trips, no pipelining).
//
//   rlock_limit_bench URL DECISIONS          # prints "<decisions> <seconds> <per second>"
//   rlock_limit_bench --evalsha-args NAME    # the EVALSHA words of one decision, one a line
//
// The second form lets bench/run.sh give redis-benchmark the very call the first form
// makes (the script is loaded by the first form's EVALSHA/EVAL fallback).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "prim/key_layout.hpp"
#include "prim/limiter.hpp"
#include "redis/script.hpp"
#include "redis/url.hpp"
#include "util/error.hpp"

namespace {

// A limit no run reaches, so every decision is an allowed one that writes.
rlock::prim::LimitRequest request() {
  rlock::prim::LimitRequest r;
  r.config = {1'000'000'000, 1000, 1'000'000'000, false, 0};
  return r;
}

int print_evalsha_args(const std::string& name) {
  rlock::prim::KeyLayout layout;
  auto r = request();
  // KEYS and ARGV as Limiter::decide sends them (see lua/limit_decide.lua), one a line
  // (the client id is the empty line; no reply record, so its life, the last, is unused).
  std::printf("EVALSHA\n%s\n2\n%s\n%s\n%lld\n%lld\n%lld\n0\n0\n1\n\n0\n0\n5000\n",
              rlock::redis::scripts::limit_decide.sha1, layout.limiter_key(name).c_str(),
              layout.limiter_clients_key(name).c_str(), r.config.rate, r.config.per_ms,
              r.config.burst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--evalsha-args") return print_evalsha_args(argv[2]);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s URL DECISIONS | --evalsha-args NAME\n", argv[0]);
    return 64;
  }
  try {
    rlock::redis::ConnectOptions options;
    options.endpoint = rlock::redis::parse_url(argv[1]);
    rlock::redis::Topology topology(options);
    rlock::prim::KeyLayout layout;
    rlock::prim::Limiter limiter(topology, layout, "bench-g-lib");
    const auto req = request();
    const long n = std::atol(argv[2]);
    limiter.decide(req);  // connect and load the script before timing
    auto start = std::chrono::steady_clock::now();
    long allowed = 0;
    for (long i = 0; i < n; ++i) {
      auto d = limiter.decide(req);
      if (const auto* dec = std::get_if<rlock::prim::LimitDecision>(&d)) allowed += dec->allowed;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%ld %.3f %.0f\n", allowed, s, n / s);
    return allowed == n ? 0 : 1;
  } catch (const rlock::Error& e) {
    std::fprintf(stderr, "rlock_limit_bench: %s\n", e.what());
    return e.exit_code();
  }
}
