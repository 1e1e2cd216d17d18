#pragma once

#include <optional>
#include <string>

#include "cli/lock_options.hpp"
#include "cli/settings.hpp"
#include "redis/topology.hpp"
#include "util/duration.hpp"

namespace CLI {
class App;
}

namespace rlock::cli {

// exec --once-per DUR and --slot-offset DUR, as given.
struct OncePerFlags {
  std::optional<std::string> every;
  std::optional<std::string> offset;
};

// Declares --once-per and --slot-offset.
void add_once_per_flags(CLI::App& sub, OncePerFlags& flags);

// Schedule slots of `every`, starting `offset` after each multiple of it since the epoch.
struct OncePer {
  Millis every{0};
  Millis offset{0};
  std::string every_text;  // as given, for messages
};

// The slots asked for (nullopt: no --once-per). Throws UsageError for a length that does not
// divide a day evenly (nor is a whole number of days), an offset outside [0, length),
// --slot-offset alone, and what --once-per does not combine with: several names, --wait,
// --shared, --layout redisson.
std::optional<OncePer> resolve_once_per(const OncePerFlags& flags, const LockRequest& req,
                                        const Settings& settings);

// Throws UsageError on a quorum: the run history is one server's list.
void refuse_once_per_on_quorum(const redis::Topology& topology);

// One line for a slot already claimed: "slot <start>..<end> of 'NAME' (--once-per DUR) was
// already claimed by host H (owner O, <status>)"; `record` is the claim's JSON record.
std::string describe_taken_slot(const std::string& name, const std::string& every,
                                long long slot_start_ms, long long slot_end_ms,
                                const std::string& record);

// This host's name, for the run's record.
std::string host_name();

}  // namespace rlock::cli
