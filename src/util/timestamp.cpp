#include "util/timestamp.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "util/error.hpp"

namespace rlock {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

bool leap(long long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(long long y, unsigned m) {
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` digits at `pos`; false if they are not there.
bool digits(std::string_view s, size_t& pos, size_t n, long long& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view s, size_t& pos, std::string_view one_of) {
  if (pos >= s.size() || one_of.find(s[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

// Milliseconds of a fraction ".ddd..." at `pos` (none: 0); digits past the third are cut.
bool fraction_ms(std::string_view s, size_t& pos, long long& ms) {
  ms = 0;
  if (pos >= s.size() || s[pos] != '.') return true;
  ++pos;
  size_t start = pos;
  long long scale = 100;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    ms += (s[pos] - '0') * scale;
    scale /= 10;
    ++pos;
  }
  return pos > start;
}

bool unix_seconds(std::string_view s, long long& ms) {
  size_t pos = 0;
  long long secs = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    if (secs > 253402300799LL) return false;  // past 9999-12-31
    secs = secs * 10 + (s[pos++] - '0');
  }
  long long frac = 0;
  if (pos == 0 || !fraction_ms(s, pos, frac) || pos != s.size()) return false;
  if (secs > 253402300799LL) return false;
  ms = secs * 1000 + frac;
  return true;
}

bool rfc3339(std::string_view s, long long& ms) {
  size_t p = 0;
  long long y, mo, d, h, mi, sec, frac = 0, oh = 0, om = 0;
  if (!digits(s, p, 4, y) || !expect(s, p, "-") || !digits(s, p, 2, mo) || !expect(s, p, "-") ||
      !digits(s, p, 2, d) || !expect(s, p, "Tt ") || !digits(s, p, 2, h) || !expect(s, p, ":") ||
      !digits(s, p, 2, mi) || !expect(s, p, ":") || !digits(s, p, 2, sec) ||
      !fraction_ms(s, p, frac)) {
    return false;
  }
  int sign = 0;
  if (expect(s, p, "Zz")) {
    sign = 1;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    sign = s[p++] == '-' ? -1 : 1;
    if (!digits(s, p, 2, oh) || !expect(s, p, ":") || !digits(s, p, 2, om) || oh > 23 || om > 59)
      return false;
  }
  if (sign == 0 || p != s.size() || y < 1970 || mo < 1 || mo > 12 || d < 1 ||
      d > days_in_month(y, static_cast<unsigned>(mo)) || h > 23 || mi > 59 || sec > 60) {
    return false;
  }
  long long secs = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
                   h * 3600 + mi * 60 + std::min(sec, 59LL) - sign * (oh * 3600 + om * 60);
  if (secs < 0) return false;
  ms = secs * 1000 + frac;
  return true;
}

}  // namespace

long long parse_timestamp(std::string_view text, std::string_view what) {
  long long ms = 0;
  if (unix_seconds(text, ms) || rfc3339(text, ms)) return ms;
  throw UsageError(std::string(what) + ": '" + std::string(text) +
                   "' is not a time (RFC 3339 such as 2026-11-22T10:00:00Z or "
                   "2026-11-22T12:00:00+02:00, or Unix seconds such as 1795341600.5)");
}

std::string base64(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (rest == 2) v |= uint8_t(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string format_timestamp_ms(long long unix_ms) {
  const long long ms = ((unix_ms % 1000) + 1000) % 1000;
  const std::time_t secs = static_cast<std::time_t>((unix_ms - ms) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // room for any int fields: GCC checks the worst case
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace rlock
