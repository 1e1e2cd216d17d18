#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace rlock {

using Millis = std::chrono::milliseconds;

// The longest duration rlock accepts anywhere: 36500d (about 100 years). Twice this added
// to the monotonic clock still fits its nanoseconds, and Redis takes it as a PEXPIRE.
inline constexpr Millis kMaxDuration{36'500LL * 86'400'000};

// Parses `250ms`, `30s`, `5m`, `2h`, `1d` and compounds of them in decreasing order
// (`1h30m`, `2m30s`, `1d2h`); a bare number is seconds (as in flock -w); fractions
// allowed (`0.5` = 500ms, `1.5h`). With `allow_forever`, `inf` and `infinity` give
// kMaxDuration. Throws UsageError naming `what` on anything else: empty text, negative
// values, unknown or repeated units, more than kMaxDuration.
Millis parse_duration(std::string_view text, std::string_view what, bool allow_forever = false);

// Short human form for messages and tables: `850ms`, `29.5s`, `12m30s`, `2h5m`, `3d4h`.
std::string format_duration(Millis d);

}  // namespace rlock
