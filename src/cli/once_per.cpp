#include "cli/once_per.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/flag_options.hpp"
#include "util/error.hpp"
#include "util/timestamp.hpp"

namespace rlock::cli {
namespace {

constexpr Millis kDay{24LL * 3600 * 1000};

std::string text_field(const nlohmann::json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "?";
}

std::string run_status(const nlohmann::json& j) {
  const std::string status = text_field(j, "status");
  auto code = j.find("exit_code");
  if (status == "exited" && code != j.end() && code->is_number())
    return "exited " + std::to_string(code->get<long long>());
  return status;
}

}  // namespace

void add_once_per_flags(CLI::App& sub, OncePerFlags& flags) {
  add_table_option(sub, "--once-per", flags.every);
  add_table_option(sub, "--slot-offset", flags.offset);
}

std::optional<OncePer> resolve_once_per(const OncePerFlags& f, const LockRequest& req,
                                        const Settings& settings) {
  if (!f.every) {
    if (f.offset) throw UsageError("--slot-offset is for --once-per");
    return std::nullopt;
  }
  OncePer o;
  o.every = parse_duration(*f.every, "--once-per");
  o.every_text = *f.every;
  if (o.every.count() <= 0) throw UsageError("--once-per must be longer than 0");
  if (kDay.count() % o.every.count() != 0 && o.every.count() % kDay.count() != 0) {
    throw UsageError("--once-per " + *f.every +
                     " does not divide a day evenly (nor is it a whole number of days): slots "
                     "would not start at the same times each day (1m, 5m, 15m, 1h, 6h, 1d...)");
  }
  if (f.offset) {
    o.offset = parse_duration(*f.offset, "--slot-offset");
    if (o.offset.count() < 0 || o.offset >= o.every) {
      throw UsageError("--slot-offset must be at least 0 and less than --once-per " + *f.every +
                       ", not " + *f.offset);
    }
  }
  if (req.names.size() > 1) throw UsageError("--once-per takes one NAME");
  if (req.wait.count() > 0) {
    throw UsageError(
        "--once-per runs in its slot or not at all: --wait would queue it behind the previous "
        "slot's job; leave --wait out");
  }
  if (req.mode == prim::LockMode::kShared) throw UsageError("--once-per has no --shared form");
  require_rlock_layout(settings, "exec --once-per");
  return o;
}

void refuse_once_per_on_quorum(const redis::Topology& topology) {
  if (!topology.quorum_members().empty()) {
    throw UsageError(
        "--once-per is not available on a quorum: its run history is one server's list");
  }
}

std::string describe_taken_slot(const std::string& name, const std::string& every,
                                long long slot_start_ms, long long slot_end_ms,
                                const std::string& record) {
  nlohmann::json j = nlohmann::json::parse(record, nullptr, false);
  if (!j.is_object()) j = nlohmann::json::object();
  return "slot " + format_timestamp_ms(slot_start_ms) + ".." + format_timestamp_ms(slot_end_ms) +
         " of '" + name + "' (--once-per " + every + ") was already claimed by host " +
         text_field(j, "host") + " (owner " + text_field(j, "owner") + ", " + run_status(j) + ")";
}

std::string host_name() {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace rlock::cli
