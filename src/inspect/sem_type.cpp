// inspect's view of a semaphore in use: its permits (a zset of permit id -> lease expiry),
// their holders, its capacity and its queue (lua/include/sem_common.lua). A semaphore with
// no permit in use has no permits key and is not listed, as a free lock is not.
#include <algorithm>
#include <string>

#include "inspect/types.hpp"
#include "util/error.hpp"

namespace rlock::inspect {
namespace {

// "<count>:<wait_id>:<owner>" of a waiters or grants member.
Json waiter_json(const std::string& m) {
  size_t a = m.find(':');
  size_t b = a == std::string::npos ? a : m.find(':', a + 1);
  if (b == std::string::npos) return {{"owner", m}, {"count", nullptr}, {"wait_id", nullptr}};
  Json count = nullptr;
  try {
    count = std::stoll(m.substr(0, a));
  } catch (const std::exception&) {
  }
  return {{"owner", m.substr(b + 1)}, {"count", count}, {"wait_id", m.substr(a + 1, b - a - 1)}};
}

class SemType final : public ObjectType {
 public:
  std::string_view type() const override { return "sem"; }
  std::string_view json_shape() const override {
    return R"({"type":"sem","name","key","capacity","permits":[{"id","owner","lease_ms"}],)"
           "\n    "
           R"("permits_total","waiters":[{"owner","count","wait_id","waited_ms"}],"waiters_total"})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.sem_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    return layout.sem_name(key);
  }

  // ZRANGE the first permits WITHSCORES, ZCARD permits, HGET capacity, HGETALL holders (one
  // per permit in use), ZRANGE the first waiters WITHSCORES, ZCARD waiters.
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    auto waiters = layout.sem_waiters_key(o.name);
    return {{"ZRANGE", o.key, "0", std::to_string(kMaxListed - 1), "WITHSCORES"},
            {"ZCARD", o.key},
            {"HGET", layout.sem_config_key(o.name), "capacity"},
            {"HGETALL", layout.sem_holders_key(o.name)},
            {"ZRANGE", waiters, "0", std::to_string(kMaxListed - 1), "WITHSCORES"},
            {"ZCARD", waiters}};
  }
  size_t read_count() const override { return 6; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& clock) const override {
    Json permits = Json::array(), waiters = Json::array(), capacity = nullptr;
    long long permits_total = 0, waiters_total = 0, ttl_ms = -1;
    std::string error;
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else if (r[0].is_error()) {
      error = "key holds another type than a semaphore's permits";
    } else if (r[0].size() == 0) {
      return std::nullopt;  // every permit released or expired since SCAN saw it
    } else {
      std::vector<std::pair<std::string, std::string>> holders;
      if (r[3].is_array()) {
        for (size_t i = 0; i + 1 < r[3].size(); i += 2)
          holders.emplace_back(r[3].at(i).str(), r[3].at(i + 1).str());
      }
      for (size_t i = 0; i + 1 < r[0].size(); i += 2) {
        std::string id = r[0].at(i).str();
        Json p = {{"id", id}, {"owner", nullptr}, {"lease_ms", nullptr}};
        for (const auto& [pid, owner] : holders) {
          if (pid == id) p["owner"] = owner;
        }
        try {
          if (clock.now_us) {
            long long left = std::max(0LL, std::stoll(r[0].at(i + 1).str()) - *clock.now_us / 1000);
            p["lease_ms"] = left;
            ttl_ms = std::max(ttl_ms, left);
          }
        } catch (const std::exception&) {
        }
        permits.push_back(std::move(p));
      }
      try {
        if (r[2].is_string()) capacity = r[2].integer();
      } catch (const DataError&) {
        error = "capacity is not a number";
      }
    }
    if (r[1].is_integer()) permits_total = r[1].integer();
    if (r[4].is_array()) {
      for (size_t i = 0; i + 1 < r[4].size(); i += 2) {
        Json w = waiter_json(r[4].at(i).str());
        w["waited_ms"] = nullptr;
        try {
          if (clock.now_us) {
            w["waited_ms"] = std::max(
                0LL,
                (*clock.now_us - static_cast<long long>(std::stod(r[4].at(i + 1).str()))) / 1000);
          }
        } catch (const std::exception&) {
        }
        waiters.push_back(std::move(w));
      }
    }
    if (r[5].is_integer()) waiters_total = r[5].integer();

    Json j = {{"type", "sem"},      {"name", o.name},
              {"key", o.key},       {"capacity", capacity},
              {"permits", permits}, {"permits_total", permits_total},
              {"waiters", waiters}, {"waiters_total", waiters_total}};
    if (!error.empty()) j["error"] = error;
    std::string state = error.empty()
                            ? std::to_string(permits_total) + "/" +
                                  (capacity.is_null() ? std::string("?")
                                                      : std::to_string(capacity.get<long long>())) +
                                  " permits"
                            : "(" + error + ")";
    return Decoded{std::move(j), {state, ttl_cell(ttl_ms), "-", std::to_string(waiters_total)}};
  }
};

}  // namespace

const ObjectType& sem_type() {
  static const SemType type;
  return type;
}

}  // namespace rlock::inspect
