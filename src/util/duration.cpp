#include "util/duration.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/error.hpp"

namespace rlock {
namespace {

constexpr double kMaxMillis = static_cast<double>(kMaxDuration.count());

// Milliseconds per unit, or -1 for an unknown unit.
double unit_millis(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  if (unit == "d") return 86'400'000;
  return -1;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A bare number of seconds in exponent notation, as flock -w takes it (`1e-1`, `2.5E+1`):
// digits with at most one dot, `e` or `E`, an optional sign and at most 3 digits.
bool is_exponent_number(std::string_view t) {
  size_t i = 0, digits = 0;
  bool dot = false;
  for (; i < t.size() && (is_digit(t[i]) || (t[i] == '.' && !dot)); ++i) {
    digits += is_digit(t[i]);
    dot = dot || t[i] == '.';
  }
  if (digits == 0 || i == t.size() || (t[i] != 'e' && t[i] != 'E')) return false;
  ++i;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t exp_start = i;
  while (i < t.size() && is_digit(t[i])) ++i;
  return i == t.size() && i > exp_start && i - exp_start <= 3;
}

}  // namespace

Millis parse_duration(std::string_view text, std::string_view what, bool allow_forever) {
  auto bad = [&](const std::string& why) {
    return UsageError(std::string(what) + ": invalid duration '" + std::string(text) + "' (" + why +
                      "; use e.g. 250ms, 30s, 5m, 1h30m, 1d" + (allow_forever ? ", inf" : "") +
                      ")");
  };
  if (text.empty()) throw bad("empty");
  if (allow_forever && (text == "inf" || text == "infinity")) return kMaxDuration;
  if (text[0] == '-') throw bad("must not be negative");
  if (text.size() <= 40 && is_exponent_number(text)) {
    double ms = std::strtod(std::string(text).c_str(), nullptr) * 1000;
    if (!std::isfinite(ms) || ms > kMaxMillis) throw bad("too large; at most 36500d");
    return Millis(static_cast<long long>(ms + 0.5));
  }
  double total = 0;
  double previous_unit = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    bool seen_digit = false, seen_dot = false;
    for (; i < text.size() && (is_digit(text[i]) || (text[i] == '.' && !seen_dot)); ++i) {
      seen_digit = seen_digit || is_digit(text[i]);
      seen_dot = seen_dot || text[i] == '.';
    }
    if (!seen_digit) throw bad("expected a number");
    size_t unit_start = i;
    while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
    std::string_view unit_text = text.substr(unit_start, i - unit_start);
    if (unit_text.empty() && start == 0 && i == text.size()) unit_text = "s";  // bare number
    double unit = unit_millis(unit_text);
    if (unit < 0)
      throw bad(unit_text.empty() ? "a number in a compound needs a unit" : "unknown unit");
    if (previous_unit != 0 && unit >= previous_unit)
      throw bad("units must go from largest to smallest");
    previous_unit = unit;
    // Numbers longer than any sane duration are refused before strtod sees them.
    if (unit_start - start > 32) throw bad("too large; at most 36500d");
    total +=
        std::strtod(std::string(text.substr(start, unit_start - start)).c_str(), nullptr) * unit;
    if (!std::isfinite(total) || total > kMaxMillis) throw bad("too large; at most 36500d");
  }
  // total >= 0: rounding half up is llround's, without libm (see CMakeLists.txt).
  return Millis(static_cast<long long>(total + 0.5));
}

std::string format_duration(Millis d) {
  long long ms = d.count();
  char buf[64];
  if (ms < 0) return std::string(1, '-').append(format_duration(Millis(-ms)));
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1fs", ms / 1000.0);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm%llds", ms / 60'000, ms / 1000 % 60);
  } else if (ms < 86'400'000) {
    std::snprintf(buf, sizeof buf, "%lldh%lldm", ms / 3'600'000, ms / 60'000 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%lldh", ms / 86'400'000, ms / 3'600'000 % 24);
  }
  return buf;
}

}  // namespace rlock
