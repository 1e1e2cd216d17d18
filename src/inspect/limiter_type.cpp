// inspect's view of a rate limiter: its config and overall TAT (a hash) and its per-client
// buckets (a zset client id -> TAT), see lua/limit_decide.lua. A limiter that is idle and
// full has no keys and is not listed. Under --layout redisson: Redisson's RRateLimiter, its
// config hash under the bare name and its OVERALL sliding log (lua/redisson_limit_decide.lua),
// also one that only Java clients created.
#include <algorithm>
#include <cmath>
#include <cstdint>
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
    if (o.key == o.name) {  // Redisson's: the config, its TTL, the permits left, the log
      const std::string tag = "{" + o.name + "}";
      return {{"HMGET", o.key, "rate", "interval", "type", "keepAliveTime"},
              {"PTTL", o.key},
              {"GET", tag + ":value"},
              {"ZRANGE", tag + ":permits", "0", std::to_string(kMaxListed - 1), "WITHSCORES"}};
    }
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
    if (o.key == o.name && !refusal(r, read_count())) {
      if (r[0].is_error() || !r[0].is_array() || r[0].size() != 4) return std::nullopt;
      if (r[0].at(0).is_nil() && r[0].at(1).is_nil() && r[0].at(2).is_nil()) return std::nullopt;
      j["keep_alive_ms"] = nullptr;
      try {
        decode_redisson(r, clock, j);
      } catch (const std::exception&) {
        error = "not a well-formed Redisson RRateLimiter";
      }
    } else if (auto denied = refusal(r, read_count())) {
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
    const bool redisson = j.contains("keep_alive_ms");
    if (error.empty()) {
      state = std::to_string(j["rate"].get<long long>()) + "/" +
              format_duration(Millis(j["per_ms"].get<long long>()));
      if (redisson)
        state += j["per_client"].get<bool>() ? " Redisson PER_CLIENT" : " Redisson OVERALL";
      else
        state += " burst " + std::to_string(j["burst"].get<long long>());
      if (!j["tokens"].is_null())
        state += ", " + std::to_string(j["tokens"].get<long long>()) + " left";
      if (!j["client_buckets"].is_null())
        state += ", " + std::to_string(j["client_buckets"].get<long long>()) + " clients";
    }
    std::string ttl = ttl_cell(j["ttl_ms"].get<long long>());
    return Decoded{std::move(j), {state, ttl, "-", "-"}};
  }

 private:
  // Redisson's RRateLimiter: rate, interval and type, and (OVERALL) the permits a call
  // could take now, as its tryAcquire counts them: the value, plus the permits whose window
  // ended, capped at the rate less those still in it (the log's first kMaxListed entries;
  // each member is struct.pack('Bc0I', #random, random, permits), little-endian on Redis).
  static void decode_redisson(const redis::Reply* r, const BatchClock& clock, Json& j) {
    const auto& c = r[0];
    const long long rate = std::stoll(c.at(0).str()), interval = std::stoll(c.at(1).str());
    const std::string type = c.at(2).str();
    if (rate < 1 || interval < 1 || (type != "0" && type != "1")) throw DataError("bad config");
    j["rate"] = rate;
    j["per_ms"] = interval;
    j["burst"] = rate;
    j["per_client"] = type == "1";
    j["keep_alive_ms"] = c.at(3).is_nil() ? 0 : std::stoll(c.at(3).str());
    if (type == "1" || !clock.now_us || !r[3].is_array()) return;
    const long long now = *clock.now_us / 1000;
    long long released = 0, used = 0;
    for (size_t i = 0; i + 1 < r[3].size(); i += 2) {
      const std::string m = r[3].at(i).str();
      const size_t at = 1 + (m.empty() ? 0 : static_cast<unsigned char>(m[0]));
      if (m.size() != at + 4) throw DataError("bad permit");
      std::uint32_t permits = 0;
      for (int b = 3; b >= 0; --b) permits = permits << 8 | static_cast<unsigned char>(m[at + b]);
      (std::stod(r[3].at(i + 1).str()) <= static_cast<double>(now - interval) ? released : used) +=
          permits;
    }
    long long left = rate;
    if (r[2].is_string()) {
      left = std::stoll(r[2].str());
      if (released > 0) left = left + released > rate ? rate - used : left + released;
    }
    j["tokens"] = std::max(left, 0LL);
  }

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
