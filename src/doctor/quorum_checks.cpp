#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "doctor/checks.hpp"
#include "redis/errors.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::doctor {

// A quorum member's age as the restart rule reads it (read-only: nothing is written), with
// `server_info` its INFO server section.
redis::MemberAge member_age(redis::Topology& t, const Fields& server_info) {
  redis::MemberAge age;
  // As lua/quorum_member.lua reads them: digits only, anything else is none (0).
  auto read = [&](std::string_view key) {
    return redis::kept_ms(t.command({"GET", key}).str()).value_or(0);
  };
  age.longest_lease = read(redis::kLongestLeaseKey);
  age.first_write = read(redis::kFirstWriteKey);
  redis::Reply time = t.command({"TIME"});
  age.now = std::stoll(time.at(0).str()) * 1000 + std::stoll(time.at(1).str()) / 1000;
  age.uptime = redis::member_uptime(t.command({"GET", redis::kStartedKey}).str(),
                                    number(server_info, "uptime_in_seconds", 0) * 1000, age.now);
  return age;
}

// The quorum's restart rule, member by member: a member restarted without its data does
// not count towards a majority until the longest lease has passed.
void check_restarts(const std::vector<std::pair<std::string, redis::MemberAge>>& ages,
                    std::vector<Finding>& out) {
  long long longest = 0, first_use = 0;
  for (const auto& [server, age] : ages) {
    longest = std::max(longest, age.longest_lease);
    if (age.first_write > 0)
      first_use = first_use ? std::min(first_use, age.first_write) : age.first_write;
  }
  for (const auto& [server, age] : ages) {
    Millis wait = redis::not_counted_for(age, longest, first_use);
    if (wait.count() > 0) {
      out.push_back({server, "restart", Level::kWarn,
                     "restarted " + format_duration(Millis(age.uptime)) +
                         " ago without its data: not counted towards a majority for another " +
                         format_duration(wait) + " (the longest lease, " +
                         format_duration(Millis(longest)) + ", must pass first)"});
    } else {
      out.push_back({server, "restart", Level::kOk, "counts towards a majority"});
    }
  }
}

// Two members of a quorum URL that are one server under two names (an alias, a second
// address, a proxy): it counts twice, and a majority can be fewer servers than it says.
void check_distinct(const std::vector<std::pair<std::string, std::string>>& run_ids,
                    std::vector<Finding>& out) {
  for (size_t j = 0; j < run_ids.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (run_ids[j].second.empty() || run_ids[j].second != run_ids[i].second) continue;
      out.push_back({run_ids[j].first, "distinct", Level::kFail,
                     "the same server as " + run_ids[i].first + " (run_id " + run_ids[j].second +
                         "): it counts twice towards a majority; name each server once"});
      break;
    }
  }
}

}  // namespace rlock::doctor
