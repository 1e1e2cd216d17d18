#include "inspect/redisson_sem_view.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "redis/script.hpp"
#include "redis/script_args.hpp"

namespace rlock::inspect::redisson_sem {

namespace {

// An RSemaphore's key is its name; no key of rlock's sem layouts is.
bool is_count_key(const Found& o) { return o.key == o.name; }

// Redisson's LongCodec value, as lua/include/redisson_sem.lua reads it (a sign allowed:
// reducePermits may take the count below 0).
std::optional<long long> free_count(const std::string& v) {
  const size_t digits = v.size() - (!v.empty() && v[0] == '-');
  if (digits == 0 || v.size() > 16) return std::nullopt;
  for (size_t i = v.size() - digits; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return std::nullopt;
  }
  return std::stoll(v);
}

// An RSemaphore from GET and PTTL of its name; nullopt for a value that is no whole number
// (some other string: not an RSemaphore) or a key gone since SCAN.
std::optional<Decoded> decode_count(const Found& o, const redis::Reply* r) {
  Json free = nullptr;
  std::string error;
  if (auto denied = refusal(r, 2)) {
    error = *denied;
  } else if (r[0].is_error()) {
    error = "key holds another type than an RSemaphore's free count";
  } else if (r[0].is_nil()) {
    return std::nullopt;
  } else if (auto n = free_count(r[0].str())) {
    free = *n;
  } else {
    return std::nullopt;
  }
  const long long ttl_ms = r[1].is_integer() ? r[1].integer() : -1;
  Json j = {{"type", "sem"},
            {"name", o.name},
            {"key", o.key},
            {"capacity", nullptr},
            {"free", free},
            {"permits", Json::array()},
            {"permits_total", nullptr},
            {"waiters", Json::array()},
            {"waiters_total", nullptr}};
  if (!error.empty()) j["error"] = error;
  std::string state =
      error.empty() ? std::to_string(free.get<long long>()) + " free" : "(" + error + ")";
  return Decoded{std::move(j), {state, ttl_cell(ttl_ms), "-", "-"}};
}

}  // namespace

bool is_key(const Found& o) { return o.key == "{" + o.name + "}:timeout" || is_count_key(o); }

std::vector<std::vector<std::string>> reads(const Found& o) {
  if (is_count_key(o)) return {{"GET", o.key}, {"PTTL", o.key}};
  using C = redis::contract::redisson_sem_status;
  std::vector<std::string> eval = {"EVAL", std::string(redis::scripts::redisson_sem_status.source),
                                   std::to_string(C::kNumKeys), o.name, o.key};
  const std::string limit = std::to_string(kMaxListed);
  for (auto& a : redis::args_of<C>().set(C::kArgFrom, "0").set(C::kArgLimit, limit).strings())
    eval.push_back(std::move(a));
  return {std::move(eval), {"PTTL", o.key}};
}

std::optional<Decoded> decode(const Found& o, const redis::Reply* r, const BatchClock& clock) {
  if (is_count_key(o)) return decode_count(o, r);
  Json permits = Json::array(), capacity = nullptr;
  long long taken = 0, ttl_ms = -1;
  std::string error;
  if (auto denied = refusal(r, 2)) {
    error = *denied;
  } else if (r[0].is_error()) {
    const std::string e = r[0].str();
    error = e.rfind("MALFORMED", 0) == 0 ? "its free count is not a whole number"
                                         : "a key of this semaphore holds another type (" + e + ")";
  } else {
    const redis::ReplyView v = r[0];
    taken = v.at(2).integer();
    if (taken == 0) return std::nullopt;  // every permit released or expired since SCAN
    if (v.at(0).integer() >= 0) capacity = v.at(0).integer() + taken;
    const long long now_ms = v.at(1).integer();
    const bool aged = clock.now_us.has_value();
    for (size_t i = 4; i + 1 < v.size(); i += 2) {
      const long long expiry = v.at(i + 1).integer();
      Json lease = expiry < 0 ? Json(-1) : aged ? Json(std::max(0LL, expiry - now_ms)) : Json();
      if (expiry >= 0 && aged) ttl_ms = std::max(ttl_ms, expiry - now_ms);
      permits.push_back({{"id", v.at(i).str()},
                         {"owner", nullptr},
                         {"lease_ms", lease},
                         {"note", nullptr},
                         {"acquired_at", nullptr}});
    }
    // Permits without expiry: the zset's own, if any (Redisson's acquire copies the name's).
    if (ttl_ms < 0 && r[1].integer() > 0) ttl_ms = r[1].integer();
  }
  Json j = {{"type", "sem"},
            {"name", o.name},
            {"key", o.key},
            {"capacity", capacity},
            {"permits", permits},
            {"permits_total", taken},
            {"waiters", Json::array()},
            {"waiters_total", 0}};
  if (!error.empty()) j["error"] = error;
  std::string state = error.empty()
                          ? std::to_string(taken) + "/" +
                                (capacity.is_null() ? std::string("?")
                                                    : std::to_string(capacity.get<long long>())) +
                                " permits"
                          : "(" + error + ")";
  return Decoded{std::move(j), {state, ttl_cell(ttl_ms), "-", "0"}};
}

}  // namespace rlock::inspect::redisson_sem
