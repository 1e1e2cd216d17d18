// inspect's view of a name's run history (exec --once-per): the list of run records, newest
// first (lua/include/run_history.lua), kept after the lock is gone, and the lock hash's
// owners, which tell a "running" record whose rlock died without recording its end.
#include <algorithm>
#include <memory>
#include <string>

#include "inspect/types.hpp"
#include "util/timestamp.hpp"

namespace rlock::inspect {
namespace {

Json time_of(const Json& record, const char* field) {
  auto it = record.find(field);
  if (it == record.end() || !it->is_number()) return nullptr;
  return format_timestamp_ms(it->get<long long>());
}

Json number_of(const Json& record, const char* field) {
  auto it = record.find(field);
  if (it == record.end() || !it->is_number()) return nullptr;
  return it->get<long long>();
}

Json text_of(const Json& record, const char* field) {
  auto it = record.find(field);
  if (it == record.end() || !it->is_string()) return nullptr;
  return *it;
}

// One stored record as shown. A "running" record whose owner no longer holds the lock ended
// without its end being recorded (its rlock or host died): "lost", with no end time.
Json shown_run(const Json& r, const std::vector<std::string>& lock_owners) {
  Json status = text_of(r, "status");
  if (status == "running") {
    const Json owner = text_of(r, "owner");
    const bool held = owner.is_string() && std::find(lock_owners.begin(), lock_owners.end(),
                                                     owner.get<std::string>()) != lock_owners.end();
    if (!held) status = "lost";
  }
  return Json{{"host", text_of(r, "host")},
              {"owner", text_of(r, "owner")},
              {"slot_start", time_of(r, "slot_start_ms")},
              {"slot_end", time_of(r, "slot_end_ms")},
              {"started_at", time_of(r, "started_ms")},
              {"ended_at", time_of(r, "ended_ms")},
              {"status", status},
              {"exit_code", number_of(r, "exit_code")},
              {"slot_start_ms", number_of(r, "slot_start_ms")},
              {"started_ms", number_of(r, "started_ms")},
              {"ended_ms", number_of(r, "ended_ms")},
              {"id", text_of(r, "id")}};
}

std::string status_text(const Json& run) {
  std::string s = run["status"].is_string() ? run["status"].get<std::string>() : "?";
  if (s == "exited" && run["exit_code"].is_number())
    s += " " + std::to_string(run["exit_code"].get<long long>());
  return s;
}

std::string text_or(const Json& j, const char* dash) {
  return j.is_string() ? j.get<std::string>() : dash;
}

class RunsType final : public ObjectType {
 public:
  explicit RunsType(int history) : history_(history) {}
  std::string_view type() const override { return "runs"; }
  std::string_view json_shape() const override {
    return R"({"type":"runs","name","key","runs_total","runs":[{"host","owner","slot_start","slot_end","started_at","ended_at","status","exit_code","slot_start_ms","started_ms","ended_ms","id"}]})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.runs_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    return layout.runs_name(key);
  }

  // LRANGE of the newest `history_` records, LLEN, HKEYS of the lock hash.
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    return {{"LRANGE", o.key, "0", std::to_string(history_ - 1)},
            {"LLEN", o.key},
            {"HKEYS", layout.lock_key(o.name)}};
  }
  size_t read_count() const override { return 3; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& /*clock*/) const override {
    std::string error;
    Json runs = Json::array();
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else if (r[0].is_error()) {
      error = "key holds another type than a run history (a list)";
    } else if (r[0].is_array() && r[0].size() == 0) {
      return std::nullopt;  // deleted since SCAN saw it
    }
    std::vector<std::string> owners;
    if (r[2].is_array()) {
      for (size_t i = 0; i < r[2].size(); ++i) owners.push_back(r[2].at(i).str());
    }
    if (error.empty() && r[0].is_array()) {
      for (size_t i = 0; i < r[0].size(); ++i) {
        Json record = Json::parse(r[0].at(i).str(), nullptr, false);
        if (record.is_object()) {
          runs.push_back(shown_run(record, owners));
        } else {
          error = "a run record is not JSON";
        }
      }
    }
    const long long total = r[1].is_integer() ? r[1].integer() : 0;
    Json j = {
        {"type", "runs"}, {"name", o.name}, {"key", o.key}, {"runs_total", total}, {"runs", runs}};
    if (!error.empty()) j["error"] = error;
    Decoded d{j, {summary(runs, error), "-", "-", "-"}, {}};
    for (const auto& run : runs) {
      d.detail_lines.push_back("  " + text_or(run["slot_start"], "-") + "  " + status_text(run) +
                               "  " + text_or(run["host"], "?") + "  " +
                               text_or(run["started_at"], "-") + ".." +
                               text_or(run["ended_at"], "-") + "  " + text_or(run["owner"], "?"));
    }
    return d;
  }

 private:
  static std::string summary(const Json& runs, const std::string& error) {
    if (!error.empty()) return "(" + error + ")";
    if (runs.empty()) return "no runs";
    return "last: " + status_text(runs[0]) + " on " + text_or(runs[0]["host"], "?");
  }

  int history_;
};

}  // namespace

const ObjectType& runs_type() {
  static const RunsType type(kDefaultHistory);
  return type;
}

std::unique_ptr<ObjectType> make_runs_type(int history) {
  return std::make_unique<RunsType>(history);
}

}  // namespace rlock::inspect
