#pragma once

#include <string_view>

namespace rlock {

inline constexpr size_t kMaxNameBytes = 512;

// Checks an object name: non-empty, at most 512 bytes, no control characters.
// Throws UsageError saying which rule it breaks.
void validate_name(std::string_view name);

}  // namespace rlock
