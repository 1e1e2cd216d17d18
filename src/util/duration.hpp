#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace rlock {

using Millis = std::chrono::milliseconds;

// Parses `250ms`, `30s`, `5m`, `2h`, `1d`; a bare number is seconds (as in flock -w),
// fractions allowed (`0.5` = 500ms). Throws UsageError naming `what` on anything else,
// negative values or overflow.
Millis parse_duration(std::string_view text, std::string_view what);

// Short human form for messages and tables: `850ms`, `29.5s`, `12m30s`, `2h5m`.
std::string format_duration(Millis d);

}  // namespace rlock
