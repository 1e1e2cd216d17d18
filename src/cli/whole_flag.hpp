#pragma once

#include <string>

namespace rlock::cli {

// The value of a numeric flag: plain decimal digits (no sign, no 0x, no exponent; leading
// zeros are decimal, not octal) from `min` to `max`. Throws UsageError naming `what`, the
// range and the text given, never a number it wrapped or clamped to.
long long parse_whole_flag(const std::string& text, const std::string& what, long long min,
                           long long max);

}  // namespace rlock::cli
