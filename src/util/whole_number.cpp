#include "util/whole_number.hpp"

#include <charconv>

namespace rlock {

bool parse_stored_whole(std::string_view text, long long& out) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return false;
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v > kMaxExactWhole) return false;
  out = v;
  return true;
}

}  // namespace rlock
