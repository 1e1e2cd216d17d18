#include "cli/whole_flag.hpp"

#include <charconv>

#include "util/error.hpp"

namespace rlock::cli {

long long parse_whole_flag(const std::string& text, const std::string& what, long long min,
                           long long max) {
  long long v = 0;
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!digits || ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
    throw UsageError(what + " must be a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'");
  }
  return v;
}

}  // namespace rlock::cli
