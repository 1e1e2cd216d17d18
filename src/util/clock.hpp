#pragma once

#include <chrono>

namespace rlock {

// Local deadlines (waits, lease deadlines of this process) use the monotonic clock;
// anything shared between hosts uses the Redis server clock inside Lua.
using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

inline std::chrono::milliseconds millis_until(Deadline d) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(d - SteadyClock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

}  // namespace rlock
