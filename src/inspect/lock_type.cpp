// inspect's view of a lock: the hash owner -> count with its lease, the fencing token,
// the queue of waiters (lua/include/lock_common.lua) and a grant not claimed yet.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "inspect/types.hpp"
#include "prim/lock.hpp"
#include "util/error.hpp"
#include "util/timestamp.hpp"
#include "util/whole_number.hpp"

namespace rlock::inspect {
namespace {

// A waiters member "<lease_ms>:<kind>:<wait_id>:<owner>" (the owner may hold ':').
struct Member {
  std::string kind, wait_id, owner;
};

std::optional<Member> parse_member(const std::string& m) {
  size_t a = m.find(':');
  size_t b = a == std::string::npos ? a : m.find(':', a + 1);
  size_t c = b == std::string::npos ? b : m.find(':', b + 1);
  if (c == std::string::npos) return std::nullopt;
  return Member{m.substr(a + 1, b - a - 1), m.substr(b + 1, c - b - 1), m.substr(c + 1)};
}

Json member_json(const std::string& m) {
  auto p = parse_member(m);
  if (!p) return {{"owner", m}, {"kind", nullptr}, {"wait_id", nullptr}};
  return {{"owner", p->owner}, {"kind", p->kind}, {"wait_id", p->wait_id}};
}

// A reply to HSCAN that is not [cursor, [field, value, ...]] comes from no Redis: it is
// told apart from stored data that is not a lock.
struct BadScanReply : DataError {
  BadScanReply()
      : DataError("unexpected reply from redis to HSCAN: not [cursor, [field, value...]]") {}
};

// The fields and values of an HSCAN reply (at most kMaxListed pairs: the server's step
// may return a few more).
redis::ReplyView scanned(const redis::ReplyView& r) {
  if (!r.is_array() || r.size() != 2 || !r.at(1).is_array() || r.at(1).size() % 2 != 0)
    throw BadScanReply();
  return r.at(1);
}
size_t listed_pairs(const redis::ReplyView& fields) {
  return std::min(fields.size() / 2, static_cast<size_t>(kMaxListed));
}

// Reader holders from the readers hash: id ("owner" or "owner\x1f<hold id>") ->
// "<count>:<expiry server ms>", each with its own lease left. `malformed` is set when a
// value is not of that shape (another program wrote it): the holder is shown, count null.
Json reader_holders(const redis::ReplyView& fields, const BatchClock& clock, bool& malformed) {
  Json out = Json::array();
  for (size_t k = 0; k < listed_pairs(fields); ++k) {
    std::string id = fields.at(2 * k).str(), value = fields.at(2 * k + 1).str();
    Json h = {{"owner", id.substr(0, id.find('\x1f'))},
              {"count", nullptr},
              {"lease_ms", nullptr},
              {"shared", true}};
    long long count = 0, expiry_ms = 0;
    size_t colon = value.find(':');
    if (colon == std::string::npos ||
        !parse_stored_whole(std::string_view(value).substr(0, colon), count) ||
        !parse_stored_whole(std::string_view(value).substr(colon + 1), expiry_ms)) {
      malformed = true;
    } else {
      h["count"] = count;
      if (clock.now_us) h["lease_ms"] = std::max(0LL, expiry_ms - *clock.now_us / 1000);
    }
    out.push_back(std::move(h));
  }
  return out;
}

Json text_or_null(const std::map<std::string, std::string>& notes, const std::string& field) {
  auto it = notes.find(field);
  if (it == notes.end() || it->second.empty()) return nullptr;
  return it->second;
}

// Server milliseconds as RFC 3339, or null when `ms` is not a stored whole number.
Json time_or_null(std::string_view ms) {
  long long at = 0;
  if (!parse_stored_whole(ms, at)) return nullptr;
  return format_timestamp_ms(at);
}

// The exclusive holders' "note" and "acquired_at", from the record of the hold (written
// with it, server clock); the readers keep none, and show neither field.
void add_hold_notes(Json& holders, const std::map<std::string, std::string>& notes) {
  auto owner = notes.find("owner");
  auto at = notes.find("at");
  for (auto& h : holders) {
    const bool noted = owner != notes.end() && h["owner"] == owner->second;
    h["note"] = noted ? text_or_null(notes, "note") : Json(nullptr);
    h["acquired_at"] = noted && at != notes.end() ? time_or_null(at->second) : Json(nullptr);
  }
}

class LockType final : public ObjectType {
 public:
  std::string_view type() const override { return "lock"; }
  std::string_view json_shape() const override {
    return R"({"type":"lock","name","key","mode","holders":[{"owner","count","lease_ms","shared",)"
           "\n    "
           R"("note","acquired_at"}],"holders_total","ttl_ms","fence","waiters":[{"owner","kind",)"
           "\n    "
           R"("wait_id","waited_ms","waiting_since","priority","note"}],"waiters_total","grant"})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.lock_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    if (auto name = layout.lock_name(key)) return name;
    return layout.readers_name(key);
  }

  // HSCAN (the first holders), PTTL, GET fence, ZRANGE the first waiters WITHSCORES, ZCARD
  // waiters, GET grant, HSCAN readers (the first ones), HLEN, HLEN readers, PTTL readers,
  // HSCAN notes (the hold's record and the waiters' notes; a small hash comes whole):
  // bounded replies whatever the number of holders. A lock is found by its hash or, held by
  // readers only, by theirs.
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    auto key = layout.lock_key(o.name);
    auto waiters = layout.waiters_key(o.name);
    auto readers = layout.readers_key(o.name);
    const std::string n = std::to_string(kMaxListed);
    return {{"HSCAN", key, "0", "COUNT", n},
            {"PTTL", key},
            {"GET", layout.fence_key(o.name)},
            {"ZRANGE", waiters, "0", std::to_string(kMaxListed - 1), "WITHSCORES"},
            {"ZCARD", waiters},
            {"GET", layout.grant_key(o.name)},
            {"HSCAN", readers, "0", "COUNT", n},
            {"HLEN", key},
            {"HLEN", readers},
            {"PTTL", readers},
            {"HSCAN", layout.notes_key(o.name), "0", "COUNT", std::to_string(2 * kMaxListed + 3)}};
  }
  size_t read_count() const override { return 11; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& clock) const override {
    bool via_readers = !o.key.empty() && o.key.find("lock-readers:") != std::string::npos;
    long long writers_total = r[7].is_integer() ? r[7].integer() : 0;
    const long long readers_total = r[8].is_integer() ? r[8].integer() : 0;
    // Found by its readers hash while it also has a writer: the lock's own key lists it.
    if (via_readers && writers_total > 0) return std::nullopt;
    bool bad_readers = false;
    Json readers = Json::array();
    std::string error;
    try {
      if (!r[6].is_error() && !r[6].is_nil())
        readers = reader_holders(scanned(r[6]), clock, bad_readers);
    } catch (const BadScanReply& e) {
      error = e.what();
    }
    if (via_readers && readers.empty()) return std::nullopt;  // gone since SCAN saw it
    Json j = {{"type", "lock"}, {"name", o.name}, {"key", o.key}, {"mode", "exclusive"}};
    Json holders = Json::array();
    Json waiters = Json::array();
    long long ttl_ms = -1, waiters_total = 0;
    Json fence = nullptr, grant = nullptr;
    std::string rw_mode;
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else if (error.empty() && !read_exclusive(o, r, writers_total == 0 && readers.empty(),
                                                holders, error, rw_mode)) {
      return std::nullopt;
    }
    if (error.empty() && r[6].is_error()) error = "readers key holds another type than a hash";
    if (error.empty() && bad_readers)
      error = "readers hash whose values are not \"<count>:<expiry>\": not a lock's readers";
    if (r[1].is_integer()) ttl_ms = r[1].integer();
    try {
      if (r[2].is_string()) fence = r[2].integer();
    } catch (const DataError&) {
      error = error.empty() ? "fencing token is not a number" : error;
    }
    const auto notes = hscan_fields(r[10]);
    add_hold_notes(holders, notes);
    if (r[3].is_array()) waiters = waiters_json(r[3], clock, notes);
    if (r[4].is_integer()) waiters_total = r[4].integer();
    if (r[5].is_string() && !r[5].str().empty()) grant = member_json(r[5].str());

    const auto exclusive_listed = static_cast<long long>(holders.size());
    for (auto& h : readers) holders.push_back(h);
    if (!readers.empty() && writers_total == 0) {
      j["mode"] = "shared";
      ttl_ms = shared_ttl(readers, readers_total, r[9]);
    }
    if (rw_mode == "read") j["mode"] = "shared";
    j["holders"] = holders;
    // The mode field is no holder.
    if (!rw_mode.empty()) writers_total = std::max(0LL, writers_total - 1);
    const long long holders_total = std::max(writers_total, exclusive_listed) +
                                    std::max(readers_total, static_cast<long long>(readers.size()));
    j["holders_total"] = holders_total;
    j["ttl_ms"] = ttl_ms;
    j["fence"] = fence;
    j["waiters"] = waiters;
    j["waiters_total"] = waiters_total;
    j["grant"] = grant;
    if (!error.empty()) j["error"] = error;
    return Decoded{std::move(j),
                   cells(holders, holders_total, error, ttl_ms, fence, waiters, waiters_total)};
  }

 private:
  // The exclusive holders from the lock hash (r[0], lease r[1]) into `holders`, or what is
  // wrong into `error`. False when the object is no lock to show: gone since SCAN saw it
  // (`released`), or under Redisson's layout some other program's key of that name.
  // `rw_mode`: Redisson's RReadWriteLock's mode ("read", "write"), "" for another lock.
  static bool read_exclusive(const Found& o, const redis::Reply* r, bool released, Json& holders,
                             std::string& error, std::string& rw_mode) {
    if (r[0].is_error()) {
      if (o.key == o.name) return false;  // Redisson's layout: some other key
      error = "key holds another type than a lock hash";
      return true;
    }
    if (released) return false;
    try {
      const long long ttl_ms = r[1].is_integer() ? r[1].integer() : -1;
      redis::ReplyView fields = scanned(r[0]);
      for (size_t k = 0; k < listed_pairs(fields); ++k) {
        const std::string owner = fields.at(2 * k).str();
        // Redisson's RRateLimiter's config (inspect/limiter_type.cpp shows it): no lock.
        if (o.key == o.name && (owner == "rate" || owner == "interval")) return false;
        if (o.key == o.name && owner == "mode") {  // Redisson's RReadWriteLock
          rw_mode = fields.at(2 * k + 1).str();
          if (rw_mode != "read" && rw_mode != "write") return false;
          continue;
        }
        long long count = 0;
        if (!parse_stored_whole(fields.at(2 * k + 1).str(), count)) throw DataError(owner);
        // An exclusive lock's holders share the hash's lease.
        holders.push_back(
            {{"owner", owner}, {"count", count}, {"lease_ms", ttl_ms}, {"shared", false}});
      }
      mark_rw_holders(rw_mode, holders);
    } catch (const BadScanReply& e) {
      error = e.what();
    } catch (const DataError&) {
      // Under Redisson's layout a lock is any hash of its name: one that is not a lock
      // is somebody else's data, not a broken lock.
      if (o.key == o.name) return false;
      holders = Json::array();
      error = "hash whose values are not reentry counts: not a lock";
    }
    return true;
  }

  // In Redisson's RReadWriteLock the writer's field is "<UUID>:<thread>:write" and every
  // other field a reader: shown as the owner that `unlock --owner` takes, and shared.
  static void mark_rw_holders(const std::string& rw_mode, Json& holders) {
    if (rw_mode.empty()) return;
    for (auto& h : holders) {
      std::string owner = h["owner"].get<std::string>();
      const bool writer = owner.size() > 6 && owner.compare(owner.size() - 6, 6, ":write") == 0;
      if (writer) h["owner"] = owner.substr(0, owner.size() - 6);
      h["shared"] = !writer;
    }
  }

  // A waiter of Redisson's RFairLock (--redisson-object fair-lock): its field and the time
  // (epoch ms) until which it keeps its place without asking again, Redisson's timeout.
  static bool redisson_fair_waiter(Json& w, const std::string& score, const BatchClock& clock) {
    try {
      const long long timeout_ms = std::stoll(score);
      w["kind"] = "redisson-fair";
      w["timeout_at"] = format_timestamp_ms(timeout_ms);
      w["timeout_ms"] = clock.now_us ? Json(timeout_ms - *clock.now_us / 1000) : Json(nullptr);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  // The waiters ZRANGE ... WITHSCORES listed, each with how long and since when it has
  // waited, its priority and its note. A score is the arrival (server us) less priority *
  // kPriorityStep (lua/include/queue_policy.lua): for any wait shorter than a step, the
  // whole steps between the score and now are its priority.
  static Json waiters_json(const redis::Reply& list, const BatchClock& clock,
                           const std::map<std::string, std::string>& notes) {
    constexpr long long kPriorityStep = 10'000'000'000'000;
    Json waiters = Json::array();
    for (size_t i = 0; i + 1 < list.size(); i += 2) {
      const std::string member = list.at(i).str();
      Json w = member_json(member);
      w["waited_ms"] = nullptr;
      w["waiting_since"] = nullptr;
      w["priority"] = nullptr;
      if (!parse_member(member) && redisson_fair_waiter(w, list.at(i + 1).str(), clock)) {
        waiters.push_back(std::move(w));
        continue;
      }
      try {
        double score = std::stod(list.at(i + 1).str());
        // Out of range (another program's score): no age, rather than an undefined cast.
        if (clock.now_us && std::fabs(score) < 9e18) {
          const long long age = std::max(0LL, *clock.now_us - static_cast<long long>(score));
          const long long priority = std::min<long long>(age / kPriorityStep, prim::kMaxPriority);
          const long long waited_us = age - priority * kPriorityStep;
          w["waited_ms"] = waited_us / 1000;
          w["waiting_since"] = format_timestamp_ms((*clock.now_us - waited_us) / 1000);
          w["priority"] = priority;
        }
      } catch (const std::exception&) {
      }
      w["note"] = text_or_null(notes, "w:" + member);
      waiters.push_back(std::move(w));
    }
    return waiters;
  }

  // A shared lock's lease: its longest reader's, or the readers hash's PTTL (`hash_ttl`)
  // when not all readers were listed.
  static long long shared_ttl(const Json& readers, long long readers_total,
                              const redis::Reply& hash_ttl) {
    long long ttl_ms = -1;
    for (const auto& h : readers) {
      if (h["lease_ms"].is_number()) ttl_ms = std::max(ttl_ms, h["lease_ms"].get<long long>());
    }
    if (readers_total > static_cast<long long>(readers.size()) && hash_ttl.is_integer())
      ttl_ms = std::max(ttl_ms, hash_ttl.integer());
    return ttl_ms;
  }

  static TableCells cells(const Json& holders, long long holders_total, const std::string& error,
                          long long ttl_ms, const Json& fence, const Json& waiters,
                          long long waiters_total) {
    std::string who;
    for (const auto& h : holders) {
      if (!who.empty()) who += ",";
      const Json& count = h["count"];
      who += h["owner"].get<std::string>() + " (x" +
             (count.is_number() ? std::to_string(count.get<long long>()) : "?") + ")";
      const Json at = h.value("acquired_at", Json()), note = h.value("note", Json());
      if (at.is_string()) who += " since " + at.get<std::string>();
      if (note.is_string()) who += " \"" + note.get<std::string>() + "\"";
    }
    if (holders_total > static_cast<long long>(holders.size()))
      who += ",... (" + std::to_string(holders_total) + " holders)";
    if (!error.empty()) who = "(" + error + ")";
    return {who, ttl_cell(ttl_ms), fence.is_null() ? "-" : std::to_string(fence.get<long long>()),
            std::to_string(waiters_total) + priorities(waiters)};
  }

  // " (priorities 5,0)" for the listed waiters when any has one; "" when none has.
  static std::string priorities(const Json& waiters) {
    std::string list;
    bool any = false;
    for (const auto& w : waiters) {
      const Json& p = w["priority"];
      const long long n = p.is_number() ? p.get<long long>() : 0;
      any = any || n > 0;
      list += (list.empty() ? "" : ",") + std::to_string(n);
    }
    return any ? " (priorities " + list + ")" : "";
  }
};

}  // namespace

const ObjectType& lock_type() {
  static const LockType type;
  return type;
}

}  // namespace rlock::inspect
