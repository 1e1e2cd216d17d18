// inspect's view of a rate limiter: its config and overall TAT (a hash) and its per-client
// buckets (a zset client id -> TAT), see lua/limit_decide.lua. A limiter that is idle and
// full has no keys and is not listed.
#include <algorithm>
#include <cmath>
#include <string>

#include "inspect/types.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::inspect {
namespace {

const char* const kFields[] = {"rate", "per_ms", "burst", "per_client", "client_rate", "tat"};

class LimiterType final : public ObjectType {
 public:
  std::string_view type() const override { return "limiter"; }
  std::string_view json_shape() const override {
    return R"({"type":"limiter","name","key","rate","per_ms","burst","client_rate",)"
           "\n    "
           R"("per_client","tokens","client_buckets","ttl_ms"})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.limiter_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    return layout.limiter_name(key);
  }

  // HMGET the config and TAT, PTTL, ZCARD clients, and the clients with the lowest TATs:
  // the stale (full) buckets not pruned yet come first, so live = ZCARD - stale among them.
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    std::vector<std::string> hmget = {"HMGET", o.key};
    for (const char* f : kFields) hmget.emplace_back(f);
    auto clients = layout.limiter_clients_key(o.name);
    return {std::move(hmget),
            {"PTTL", o.key},
            {"ZCARD", clients},
            {"ZRANGE", clients, "0", std::to_string(kMaxListed - 1), "WITHSCORES"}};
  }
  size_t read_count() const override { return 4; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& clock) const override {
    Json j = {{"type", "limiter"},         {"name", o.name},        {"key", o.key},
              {"rate", nullptr},           {"per_ms", nullptr},     {"burst", nullptr},
              {"client_rate", nullptr},    {"per_client", nullptr}, {"tokens", nullptr},
              {"client_buckets", nullptr}, {"ttl_ms", -1}};
    std::string error;
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else if (r[0].is_error()) {
      error = "key holds another type than a limiter's hash";
    } else if (r[0].size() != 6 || r[0].at(0).is_nil()) {
      return std::nullopt;  // expired since SCAN saw it
    } else {
      try {
        decode_config(r, clock, j);
      } catch (const std::exception&) {
        error = "config is not well-formed";
      }
    }
    if (r[1].is_integer()) j["ttl_ms"] = r[1].integer();
    if (!error.empty()) j["error"] = error;
    std::string state = "(" + error + ")";
    if (error.empty()) {
      state = std::to_string(j["rate"].get<long long>()) + "/" +
              format_duration(Millis(j["per_ms"].get<long long>())) + " burst " +
              std::to_string(j["burst"].get<long long>());
      if (!j["tokens"].is_null())
        state += ", " + std::to_string(j["tokens"].get<long long>()) + " left";
      if (!j["client_buckets"].is_null())
        state += ", " + std::to_string(j["client_buckets"].get<long long>()) + " clients";
    }
    std::string ttl = ttl_cell(j["ttl_ms"].get<long long>());
    return Decoded{std::move(j), {state, ttl, "-", "-"}};
  }

 private:
  // Fills the config fields, tokens left now (overall bucket) and the live client buckets.
  static void decode_config(const redis::Reply* r, const BatchClock& clock, Json& j) {
    long long rate = r[0].at(0).integer(), per_ms = r[0].at(1).integer(),
              burst = r[0].at(2).integer(), client_rate = r[0].at(4).integer();
    long long per_client_flag = r[0].at(3).integer();
    bool per_client = per_client_flag == 1;
    if (rate < 1 || per_ms < 1 || burst < 1 || (per_client_flag != 0 && !per_client))
      throw DataError("bad config");
    j["rate"] = rate;
    j["per_ms"] = per_ms;
    j["burst"] = burst;
    j["client_rate"] = client_rate > 0 ? Json(client_rate) : Json(nullptr);
    j["per_client"] = per_client;
    if (!clock.now_us) return;
    double now = static_cast<double>(*clock.now_us);
    if (!per_client || client_rate > 0) {  // the overall bucket is in use
      double t = static_cast<double>(per_ms) * 1000 / static_cast<double>(rate);
      double tat = r[0].at(5).is_nil() ? now : std::stod(r[0].at(5).str());
      if (!std::isfinite(tat)) throw DataError("bad TAT");  // "nan", "inf": no rlock wrote it
      double used = std::clamp(tat - now, 0.0, t * static_cast<double>(burst));
      // Not negative (used <= t * burst): truncation is the floor.
      j["tokens"] = static_cast<long long>((t * burst - used) / t + 1e-9);
    }
    if (per_client && r[2].is_integer() && r[3].is_array()) {
      long long stale = 0;
      for (size_t i = 1; i < r[3].size(); i += 2)
        if (std::stod(r[3].at(i).str()) <= now) ++stale;
      j["client_buckets"] = std::max(0LL, r[2].integer() - stale);
    }
  }
};

}  // namespace

const ObjectType& limiter_type() {
  static const LimiterType type;
  return type;
}

}  // namespace rlock::inspect
