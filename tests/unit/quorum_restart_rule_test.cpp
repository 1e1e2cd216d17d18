// The quorum's restart rule on the figures lua/quorum_member.lua reports: how long a member
// restarted without its data is not counted, and how its kept figures are read.
#include "redis/quorum_restart_rule.hpp"

#include <doctest/doctest.h>

#include <string>

namespace rlock::redis {
namespace {

constexpr long long kNow = 1'800'000'000'000;  // a server's clock, ms

TEST_CASE("restart rule: a member that restarted empty after the first use waits out the lease") {
  const long long first_use = kNow - 600'000;
  // Up 5 s, its data set begun in this run (first write now), the longest lease 30 s: it
  // counts once it is surely up longer than that lease (INFO's uptime is whole seconds).
  CHECK(not_counted_for({5'000, kNow, 30'000, kNow}, 30'000, first_use) == Millis(26'000));
  // No first write yet (a read-only look): the next request's would be now.
  CHECK(not_counted_for({5'000, 0, 0, kNow}, 30'000, first_use) == Millis(26'000));
  // Up longer than the longest lease: counts.
  CHECK(not_counted_for({31'000, kNow, 30'000, kNow}, 30'000, first_use) == Millis(0));
  // No lease was ever asked for: nothing can have been granted.
  CHECK(not_counted_for({5'000, kNow, 0, kNow}, 0, first_use) == Millis(0));
  // Its data is older than this run (kept across the restart): counts.
  CHECK(not_counted_for({5'000, kNow - 60'000, 30'000, kNow}, 30'000, first_use) == Millis(0));
  // Its first write is the quorum's first use, give or take the join slack (a new
  // deployment, every member's from one parallel request): counts.
  CHECK(not_counted_for({5'000, kNow - 500, 30'000, kNow}, 30'000, kNow - 1'000) == Millis(0));
  CHECK(not_counted_for({5'000, kNow, 30'000, kNow}, 30'000, kNow - 1'001) == Millis(26'000));
}

TEST_CASE("restart rule: kept figures are digits only, and the kept start beats INFO's uptime") {
  CHECK(kept_ms("1234") == 1234);
  CHECK(kept_ms("0") == 0);
  CHECK_FALSE(kept_ms("").has_value());
  CHECK_FALSE(kept_ms("-5").has_value());
  CHECK_FALSE(kept_ms("12x").has_value());
  CHECK_FALSE(kept_ms("1e3").has_value());
  CHECK(member_uptime(std::to_string(kNow - 7'000), 99'000, kNow) == 7'000);
  CHECK(member_uptime("", 99'000, kNow) == 99'000);
  CHECK(member_uptime("junk", 99'000, kNow) == 99'000);
  CHECK(member_uptime(std::to_string(kNow + 5'000), 99'000, kNow) == 0);  // never negative
}

}  // namespace
}  // namespace rlock::redis
