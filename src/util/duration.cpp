#include "util/duration.hpp"

#include <cmath>
#include <cstdio>

#include "util/error.hpp"

namespace rlock {
namespace {

constexpr double kMaxMillis = 1e15;  // ~31,000 years: beyond any lease, still exact

double unit_millis(std::string_view unit) {
  if (unit.empty() || unit == "s") return 1000;
  if (unit == "ms") return 1;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  if (unit == "d") return 86'400'000;
  return -1;
}

}  // namespace

Millis parse_duration(std::string_view text, std::string_view what) {
  auto bad = [&](const char* why) {
    return UsageError(std::string(what) + ": invalid duration '" + std::string(text) + "' (" +
                      why + "; use e.g. 250ms, 30s, 5m, 2h, 1d)");
  };
  size_t digits_end = 0;
  bool seen_digit = false, seen_dot = false;
  for (; digits_end < text.size(); ++digits_end) {
    char c = text[digits_end];
    if (c >= '0' && c <= '9') {
      seen_digit = true;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!text.empty() && text[0] == '-') throw bad("must not be negative");
  if (!seen_digit) throw bad("expected a number");
  double unit = unit_millis(text.substr(digits_end));
  if (unit < 0) throw bad("unknown unit");
  double value = std::strtod(std::string(text.substr(0, digits_end)).c_str(), nullptr);
  double ms = value * unit;
  if (!std::isfinite(ms) || ms > kMaxMillis) throw bad("too large");
  return Millis(static_cast<long long>(std::llround(ms)));
}

std::string format_duration(Millis d) {
  long long ms = d.count();
  char buf[48];
  if (ms < 0) return std::string(1, '-').append(format_duration(Millis(-ms)));
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1fs", ms / 1000.0);
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm%llds", ms / 60'000, ms / 1000 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%lldm", ms / 3'600'000, ms / 60'000 % 60);
  }
  return buf;
}

}  // namespace rlock
