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

  auto ts = rlock::to_boot_timespec(rlock::Deadline(std::chrono::milliseconds(1500)));
  CHECK(ts.tv_sec == 1);
  CHECK(ts.tv_nsec == 500'000'000);
}
