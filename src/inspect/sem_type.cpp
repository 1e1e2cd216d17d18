// inspect's view of a semaphore in use: its permits (a zset of permit id -> lease expiry),
// their holders, its capacity and its queue (lua/include/sem_common.lua). A semaphore with
// no permit in use has no permits key and is not listed, as a free lock is not.
#include <algorithm>
#include <map>
#include <string>

#include "inspect/redisson_sem_view.hpp"
#include "inspect/types.hpp"
#include "prim/semaphore.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/error.hpp"
#include "util/timestamp.hpp"
#include "util/whole_number.hpp"

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
    return R"({"type":"sem","name","key","capacity","permits":[{"id","owner","lease_ms","note",)"
           "\n    "
           R"("acquired_at"}],"permits_total","waiters":[{"owner","count","wait_id","waited_ms",)"
           "\n    "
           R"("waiting_since","note"}],"waiters_total"})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.sem_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    return layout.sem_name(key);
  }

  // The first page of lua/sem_status.lua (read-only): bounded by kMaxListed whatever the
  // number of permits and waiters, with their totals.
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    // Under --layout redisson: Redisson's RPermitExpirableSemaphore (inspect/redisson_sem_view).
    if (layout.locks_only()) return redisson_sem::reads(o);
    using C = redis::contract::sem_status;
    std::vector<std::string> eval = {"EVAL", std::string(redis::scripts::sem_status.source),
                                     std::to_string(C::kNumKeys)};
    for (auto& k : prim::semaphore_keys(layout, o.name)) eval.push_back(std::move(k));
    const std::string limit = std::to_string(kMaxListed);
    for (auto& a : redis::args_of<C>()
                       .set(C::kArgPermitsFrom, "0")
                       .set(C::kArgWaitersFrom, "0")
                       .set(C::kArgLimit, limit)
                       .strings())
      eval.push_back(std::move(a));
    return {
        std::move(eval),
        {"HSCAN", layout.sem_notes_key(o.name), "0", "COUNT", std::to_string(2 * kMaxListed + 1)}};
  }
  size_t read_count() const override { return 2; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& clock) const override {
    if (redisson_sem::is_key(o)) return redisson_sem::decode(o, r, clock);
    Json permits = Json::array(), waiters = Json::array(), capacity = nullptr;
    long long permits_total = 0, waiters_total = 0, ttl_ms = -1;
    std::string error;
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else if (r[0].is_error()) {
      const std::string e = r[0].str();
      error = e.rfind("MALFORMED", 0) == 0
                  ? "capacity is not a whole number of at most 15 digits"
                  : "a key of this semaphore holds another type (" + e + ")";
    } else {
      try {
        if (!decode_page(r[0], clock, capacity, permits, permits_total, waiters, waiters_total,
                         ttl_ms))
          return std::nullopt;  // every permit released or expired since SCAN saw it
        add_notes(hscan_fields(r[1]), permits, waiters);
      } catch (const DataError&) {
        permits = Json::array();
        waiters = Json::array();
        error = "a lease or arrival is not a whole number: not a semaphore";
      }
    }
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

 private:
  // Each permit's "note" and "acquired_at" (its record "<server ms> <note>"), each
  // waiter's "note" (null where none was given or the record is missing).
  static void add_notes(const std::map<std::string, std::string>& notes, Json& permits,
                        Json& waiters) {
    for (auto& p : permits) {
      p["note"] = nullptr;
      p["acquired_at"] = nullptr;
      auto it = notes.find("p:" + p["id"].get<std::string>());
      if (it == notes.end()) continue;
      const std::string& v = it->second;
      const size_t space = v.find(' ');
      long long at = 0;
      if (parse_stored_whole(std::string_view(v).substr(0, space), at))
        p["acquired_at"] = format_timestamp_ms(at);
      if (space != std::string::npos && space + 1 < v.size()) p["note"] = v.substr(space + 1);
    }
    for (auto& w : waiters) {
      if (!w["count"].is_number()) continue;
      // The waiters member "<count>:<wait_id>:<owner>" again.
      auto it = notes.find("w:" + std::to_string(w["count"].get<long long>()) + ":" +
                           w["wait_id"].get<std::string>() + ":" + w["owner"].get<std::string>());
      w["note"] = it == notes.end() || it->second.empty() ? Json(nullptr) : Json(it->second);
    }
  }

  // The reply of sem_status.lua (see there); false when no permit is in use. Throws
  // DataError on a number no rlock stores.
  static bool decode_page(const redis::ReplyView& r, const BatchClock& clock, Json& capacity,
                          Json& permits, long long& permits_total, Json& waiters,
                          long long& waiters_total, long long& ttl_ms) {
    auto whole = [](const redis::ReplyView& v) {
      long long n = 0;
      if (!parse_stored_whole(v.str(), n)) throw DataError(v.str());
      return n;
    };
    permits_total = r.at(2).integer();
    if (permits_total == 0) return false;
    long long cap = r.at(0).integer();
    if (cap > 0) capacity = cap;
    waiters_total = r.at(5).integer();
    const long long now_ms = r.at(1).integer();
    // Ages only when this batch could read TIME (an ACL may refuse it), as other types do.
    const bool aged = clock.now_us.has_value();
    if (aged && r.at(4).str() != "-1") ttl_ms = std::max(0LL, whole(r.at(4)) - now_ms);
    size_t i = 8;
    long long n = r.at(i++).integer();
    for (long long k = 0; k < n; ++k, i += 3) {
      const std::string owner = r.at(i + 1).str();
      Json p = {{"id", r.at(i).str()},
                {"owner", owner.empty() ? Json(nullptr) : Json(owner)},
                {"lease_ms", nullptr}};
      const long long expiry = whole(r.at(i + 2));
      if (aged) p["lease_ms"] = std::max(0LL, expiry - now_ms);
      permits.push_back(std::move(p));
    }
    n = r.at(i++).integer();
    for (long long k = 0; k < n; ++k, i += 2) {
      Json w = waiter_json(r.at(i).str());
      const long long arrival_us = whole(r.at(i + 1));
      w["waited_ms"] = aged ? Json(std::max(0LL, now_ms - arrival_us / 1000)) : Json(nullptr);
      w["waiting_since"] = format_timestamp_ms(arrival_us / 1000);
      w["note"] = nullptr;
      waiters.push_back(std::move(w));
    }
    return true;
  }
};

}  // namespace

const ObjectType& sem_type() {
  static const SemType type;
  return type;
}

}  // namespace rlock::inspect
