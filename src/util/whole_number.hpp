#pragma once

#include <string_view>

namespace rlock {

// The largest whole number a Lua script counts exactly (its numbers are doubles).
inline constexpr long long kMaxExactWhole = (1LL << 53) - 1;

// True when `text` is a whole number from 0 to kMaxExactWhole in plain decimal digits,
// stored in `out`; false for anything else (a sign, spaces, a fraction, a number out of
// range), so that a value another program stored is reported, never wrapped.
bool parse_stored_whole(std::string_view text, long long& out);

}  // namespace rlock
