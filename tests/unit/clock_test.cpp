#include "util/clock.hpp"

#include <doctest/doctest.h>
#include <time.h>

#include <cstdint>

namespace {

std::int64_t boottime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

// Deadlines must keep counting while the host sleeps: the clock is CLOCK_BOOTTIME. On a host
// that has been suspended, the monotonic clock lags behind it by the time spent asleep.
TEST_CASE("deadlines are measured on CLOCK_BOOTTIME") {
  const std::int64_t before = boottime_ns();
  const std::int64_t now = rlock::SteadyClock::now().time_since_epoch().count();
  const std::int64_t after = boottime_ns();
  CHECK(before <= now);
  CHECK(now <= after);
}

// Timers are armed with relative times (an absolute one is what libfaketime rewrites into
// a time the kernel refuses); a time already passed fires at once instead of disarming.
TEST_CASE("relative_timespec: whole seconds and nanoseconds, never zero") {
  auto ts = rlock::relative_timespec(std::chrono::milliseconds(1500));
  CHECK(ts.tv_sec == 1);
  CHECK(ts.tv_nsec == 500'000'000);
  for (auto d : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(-5'000'000'000)}) {
    auto past = rlock::relative_timespec(d);
    CHECK(past.tv_sec == 0);
    CHECK(past.tv_nsec == 1);
  }
}

#include "exec/stop_policy.hpp"

// The stop policy's numbers, as documented in rlock(1).
TEST_CASE("stop margin, the longest --kill-after and the renewal interval follow the lease") {
  using rlock::Millis;
  struct Case {
    long long lease, margin, max_kill_after, renew_with_default_kill_after;
  } cases[] = {
      // clang-format off
      {30'000, 1'000, 18'000, 9'500},  // renewed at 9.5s: half of 30s - 10s - 1s
      {10'000, 500, 5'666, 1'917},     // default kill-after shortened to 5.666s
      {2'000, 100, 1'133, 383},
      {1'000, 100, 466, 217},
      {500, 50, 233, 108},
      {1, 0, 0, 0},
      // clang-format on
  };
  for (const auto& c : cases) {
    INFO("lease " << c.lease);
    Millis lease(c.lease);
    CHECK(rlock::exec::stop_margin(lease).count() == c.margin);
    CHECK(rlock::exec::max_kill_after(lease).count() == c.max_kill_after);
    Millis kill_after = std::min(Millis(10'000), rlock::exec::max_kill_after(lease));
    Millis lead = kill_after + rlock::exec::stop_margin(lease);
    CHECK(rlock::exec::renew_interval(lease, lead).count() == c.renew_with_default_kill_after);
  }
}
