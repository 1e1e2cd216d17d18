// The clock of the harness and the deadlines its waiting helpers take.
#pragma once

#include <chrono>

namespace rlock::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Returns now + timeout: the deadline argument of the waiting helpers below.
inline Clock::time_point deadline(std::chrono::milliseconds timeout) {
  return Clock::now() + timeout;
}

// Milliseconds from `start` to `end` (default: now).
inline long long ms_between(Clock::time_point start, Clock::time_point end = Clock::now()) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(end - start).count();
}

}  // namespace rlock::test
