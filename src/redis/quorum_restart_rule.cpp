#include "redis/quorum_restart_rule.hpp"

#include <algorithm>
#include <charconv>

namespace rlock::redis {
namespace {

// How much later than the quorum's first use (the earliest first write any member
// remembers) a member's own first write may be and still count as part of that first use:
// the members of a new deployment get theirs from one parallel request, give or take the
// members' clock skew and one that answered late.
constexpr Millis kJoinSlack{1000};

}  // namespace

Millis not_counted_for(const MemberAge& m, long long longest, long long first_use) {
  // (INFO counts the uptime in whole seconds: the start may be up to 1 s earlier.)
  // No first write yet (a read-only look, rlock doctor): the next request's would be now.
  long long first_write = m.first_write > 0 ? m.first_write : m.now;
  bool began_here = first_write >= m.now - m.uptime - 1000;
  bool joined_late = first_write > first_use + kJoinSlack.count();
  // Nor does it start at a whole second: the uptime it reports may be up to 1 s more.
  long long surely_up = m.uptime - 1000;
  if (longest <= 0 || surely_up >= longest || !began_here || !joined_late) return Millis(0);
  return Millis(longest - surely_up);
}

std::optional<long long> kept_ms(std::string_view value) {
  long long out = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || value[0] == '-' || ec != std::errc() || end != value.data() + value.size())
    return std::nullopt;
  return out;
}

long long member_uptime(std::string_view started, long long info_uptime_ms, long long now_ms) {
  std::optional<long long> at = kept_ms(started);
  return at ? std::max(now_ms - *at, 0LL) : info_uptime_ms;
}

}  // namespace rlock::redis
