// The quorum's restart rule: a member that restarted without its data does not count
// towards a majority for as long as a hold it granted and lost could still be in force.
#pragma once

#include <optional>
#include <string_view>

#include "util/duration.hpp"

namespace rlock::redis {

// What lua/quorum_member.lua reports of one member (its own clock, ms).
struct MemberAge {
  long long uptime = 0;         // since the start rlock keeps (kStartedKey), or INFO's
  long long first_write = 0;    // when rlock first wrote to its data set (0: never)
  long long longest_lease = 0;  // the longest lease it was asked for (0: none)
  long long now = 0;
};
// Where the quorum keeps them (on each member, outside every prefix, no expiry).
inline constexpr std::string_view kLongestLeaseKey = "rlock:quorum:longest-lease";
inline constexpr std::string_view kFirstWriteKey = "rlock:quorum:first-write";
// The server's start (its ms) as INFO gave it when rlock first found this key missing:
// lua/quorum_member.lua says why it is kept.
inline constexpr std::string_view kStartedKey = "rlock:quorum:started";

// A member's uptime as the restart rule reads it: since `started` (kStartedKey's value,
// empty when absent) where it is kept, else INFO's `uptime_in_seconds` (ms).
long long member_uptime(std::string_view started, long long info_uptime_ms, long long now_ms);
// A kept figure as lua/quorum_member.lua reads it: digits only, anything else is none.
std::optional<long long> kept_ms(std::string_view value);

// The restart rule: how long `m` must not count towards a majority yet (0: it counts).
// `longest`: the longest lease any member remembers; `first_use`: the earliest first write
// any member remembers. A member does not count while its uptime is shorter than `longest`
// if its data set began in this run of the server and later than the quorum's first use:
// it restarted without its data, and may have granted a hold it no longer knows.
Millis not_counted_for(const MemberAge& m, long long longest, long long first_use);

}  // namespace rlock::redis
