#pragma once

#include <string>
#include <string_view>

namespace rlock {

// Parses an absolute time as Unix milliseconds: RFC 3339 (`2026-11-22T10:00:00Z`,
// `2026-11-22T12:00:00.250+02:00`; `t`/`z` and a space for `T` accepted) or Unix seconds
// with an optional fraction (`1795341600`, `1795341600.25`). Throws UsageError naming
// `what` on anything else (no offset, out-of-range fields, before 1970, after 9999).
long long parse_timestamp(std::string_view text, std::string_view what);

// Unix milliseconds as RFC 3339 UTC with milliseconds: `2026-11-22T10:00:00.250Z`.
std::string format_timestamp_ms(long long unix_ms);

// Base64 (RFC 4648, with padding) of `bytes`: how bytes that are not text print in JSON.
std::string base64(std::string_view bytes);

}  // namespace rlock
