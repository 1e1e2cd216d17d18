#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace rlock {

// CLOCK_BOOTTIME: monotonic, and it keeps counting while the host is suspended (the
// monotonic clock does not). A lease runs on the Redis server while this host sleeps, so a
// lease deadline measured on a clock that stopped would be believed after the server
// already expired the lease.
struct BootClock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return time_point(duration(std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec));
  }
};

// Local deadlines (waits, lease deadlines of this process) use the boot clock; anything
// shared between hosts uses the Redis server clock inside Lua. (The name predates the
// switch from std::chrono::steady_clock; the interface is the same.)
using SteadyClock = BootClock;
using Deadline = SteadyClock::time_point;

inline std::chrono::milliseconds millis_until(Deadline d) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(d - SteadyClock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

// A duration from now as a relative timespec (for timerfd_settime without
// TFD_TIMER_ABSTIME): at least 1ns, since 0 would disarm a timer.
inline timespec relative_timespec(SteadyClock::duration d) {
  auto ns = d.count();
  if (ns < 1) ns = 1;
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace rlock
