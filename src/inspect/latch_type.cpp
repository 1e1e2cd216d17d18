// inspect's view of a countdown latch: the count (a string), the ids that counted down (a
// set) and the expiry of both (lua/include/latch_common.lua).
#include <algorithm>
#include <string>

#include "inspect/types.hpp"
#include "util/error.hpp"
#include "util/whole_number.hpp"

namespace rlock::inspect {
namespace {

class LatchType final : public ObjectType {
 public:
  std::string_view type() const override { return "latch"; }
  std::string_view json_shape() const override {
    return R"({"type":"latch","name","key","count","ids","ids_total","ttl_ms"})";
  }
  std::string key_pattern(const prim::KeyLayout& layout, std::string_view glob) const override {
    return layout.latch_key_pattern(glob);
  }
  std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                     std::string_view key) const override {
    return layout.latch_name(key);
  }

  // GET count, PTTL, SCARD ids, SRANDMEMBER ids (at most kMaxListed distinct ones).
  std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                              const Found& o) const override {
    auto ids = layout.latch_ids_key(o.name);
    return {{"GET", o.key},
            {"PTTL", o.key},
            {"SCARD", ids},
            {"SRANDMEMBER", ids, std::to_string(kMaxListed)}};
  }
  size_t read_count() const override { return 4; }

  std::optional<Decoded> decode(const Found& o, const redis::Reply* r,
                                const BatchClock& /*clock*/) const override {
    Json count = nullptr;
    std::string error;
    if (auto denied = refusal(r, read_count())) {
      error = *denied;
    } else if (r[0].is_error()) {
      error = "key holds another type than a latch count";
    } else if (r[0].is_nil()) {
      return std::nullopt;  // expired since SCAN saw it
    } else {
      long long n = 0;
      if (parse_stored_whole(r[0].str(), n)) {
        count = n;
      } else {
        error = "count is not a whole number from 0 to 2^53-1";
      }
    }
    long long ttl_ms = r[1].is_integer() ? r[1].integer() : -1;
    long long ids_total = r[2].is_integer() ? r[2].integer() : 0;
    std::vector<std::string> ids;
    if (r[3].is_array()) {
      for (size_t i = 0; i < r[3].size(); ++i) ids.push_back(r[3].at(i).str());
    }
    std::sort(ids.begin(), ids.end());
    if (error.empty() && r[2].is_error()) error = "ids key holds another type than a set";

    Json j = {{"type", "latch"}, {"name", o.name},         {"key", o.key},    {"count", count},
              {"ids", ids},      {"ids_total", ids_total}, {"ttl_ms", ttl_ms}};
    if (!error.empty()) j["error"] = error;
    std::string state = error.empty() ? "count " + std::to_string(count.get<long long>()) + ", " +
                                            std::to_string(ids_total) + " ids"
                                      : "(" + error + ")";
    return Decoded{std::move(j), {state, ttl_cell(ttl_ms), "-", "-"}};
  }
};

}  // namespace

const ObjectType& latch_type() {
  static const LatchType type;
  return type;
}

}  // namespace rlock::inspect
