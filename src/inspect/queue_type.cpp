// inspect's view of a delayed queue (lua/include/queue_common.lua): how many items are
// scheduled and due, the items in flight with their consumers and lease left, the dead
// letters, and when the next item is due. The main hash exists while the queue holds any
// item, so an empty queue is not listed.
#include <algorithm>
#include <cmath>
#include <string>

#include "inspect/types.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"

namespace rlock::inspect {
namespace {

long long score_of(const redis::ReplyView& r) {
  try {
    double v = std::stod(r.str());
    // Out of range (another program's score): 0, rather than an undefined cast.
    return std::fabs(v) < 9e18 ? static_cast<long long>(v) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

class QueueType final : public ObjectType {
 public:
  std::string_view type() const override { return "queue"; }
  std::string_view json_shape() const override {
    return R"({"type":"queue","name","key","scheduled","due","next_due_ms","in_flight":)"
           "\n    "
           R"([{"id","consumer","lease_ms"}],"in_flight_total","dead"})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.queue_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    return layout.queue_name(key);
  }

  // HLEN main (its type), ZCARD + the first scheduled WITHSCORES, ZCARD + the first in
  // flight WITHSCORES, the due count and the listed items' leases (a read-only script:
  // "due" needs the server's now), LLEN dead letters.
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    auto sched = layout.queue_scheduled_key(o.name);
    auto inflight = layout.queue_inflight_key(o.name);
    std::string last = std::to_string(kMaxListed - 1);
    using C = redis::contract::queue_inspect;
    const std::string leases = layout.queue_leases_key(o.name), limit = std::to_string(kMaxListed);
    std::vector<std::string> eval = {"EVAL", redis::scripts::queue_inspect.source,
                                     std::to_string(C::kNumKeys)};
    for (auto& k : redis::keys_of<C>()
                       .set(C::kKeyScheduled, sched)
                       .set(C::kKeyInFlight, inflight)
                       .set(C::kKeyLeases, leases)
                       .strings())
      eval.push_back(std::move(k));
    for (auto& a : redis::args_of<C>().set(C::kArgLimit, limit).strings())
      eval.push_back(std::move(a));
    return {{"HLEN", o.key},
            {"ZCARD", sched},
            {"ZRANGE", sched, "0", last, "WITHSCORES"},
            {"ZCARD", inflight},
            {"ZRANGE", inflight, "0", last, "WITHSCORES"},
            std::move(eval),
            {"LLEN", layout.queue_dead_key(o.name)}};
  }
  size_t read_count() const override { return 7; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& clock) const override {
    std::string error;
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else {
      for (size_t i = 0; i < read_count(); ++i) {
        if (r[i].is_error()) error = "a key of this queue holds another type (" + r[i].str() + ")";
      }
    }
    if (error.empty() && r[0].integer() == 0) return std::nullopt;  // emptied since SCAN
    long long scheduled = 0, due = 0, in_flight_total = 0, dead = 0, ttl_ms = -1;
    Json next_due = nullptr, in_flight = Json::array();
    if (error.empty()) {
      long long now_ms = clock.now_us ? *clock.now_us / 1000 : -1;
      scheduled = r[1].integer();
      if (r[2].size() >= 2) next_due = score_of(r[2].at(1));
      due = r[5].at(0).integer();
      redis::ReplyView leases = r[5].at(1);
      in_flight_total = r[3].integer();
      for (size_t i = 0; i + 1 < r[4].size(); i += 2) {
        std::string id = r[4].at(i).str();
        Json item = {{"id", id}, {"consumer", nullptr}, {"lease_ms", nullptr}};
        for (size_t k = 0; k + 1 < leases.size(); k += 2) {
          if (leases.at(k).str() != id) continue;
          std::string lease = leases.at(k + 1).str();
          size_t space = lease.find(' ');
          if (space != std::string::npos) item["consumer"] = lease.substr(space + 1);
        }
        if (now_ms >= 0) {
          long long left = std::max(0LL, score_of(r[4].at(i + 1)) - now_ms);
          item["lease_ms"] = left;
          ttl_ms = std::max(ttl_ms, left);
        }
        in_flight.push_back(std::move(item));
      }
      dead = r[6].integer();
    }
    Json j = {{"type", "queue"},
              {"name", o.name},
              {"key", o.key},
              {"scheduled", scheduled},
              {"due", due},
              {"next_due_ms", next_due},
              {"in_flight", in_flight},
              {"in_flight_total", in_flight_total},
              {"dead", dead}};
    if (!error.empty()) j["error"] = error;
    std::string state = error.empty()
                            ? std::to_string(scheduled) + " scheduled (" + std::to_string(due) +
                                  " due), " + std::to_string(in_flight_total) + " in flight, " +
                                  std::to_string(dead) + " dead"
                            : "(" + error + ")";
    return Decoded{std::move(j), {state, ttl_cell(ttl_ms), "-", "-"}};
  }
};

}  // namespace

const ObjectType& queue_type() {
  static const QueueType type;
  return type;
}

}  // namespace rlock::inspect
