#include "inspect/object_type.hpp"

#include "inspect/types.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::inspect {

const std::vector<const ObjectType*>& object_types() {
  // Add a type here (and its factory in types.hpp): scan, --type, JSON and table follow.
  static const std::vector<const ObjectType*> types = {
      &lock_type(), &sem_type(), &latch_type(), &limiter_type(), &queue_type(), &runs_type()};
  return types;
}

std::vector<const ObjectType*> select_types(std::string_view list) {
  if (list.empty()) return object_types();
  std::vector<const ObjectType*> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view word = list.substr(start, comma - start);
    const ObjectType* found = nullptr;
    std::string known;
    for (const auto* t : object_types()) {
      if (t->type() == word) found = t;
      known += (known.empty() ? "" : ", ") + std::string(t->type());
    }
    if (found == nullptr) {
      throw UsageError("--type: unknown type '" + std::string(word) + "' (known: " + known + ")");
    }
    bool listed = false;
    for (const auto* t : out) listed = listed || t == found;
    if (!listed) out.push_back(found);
    start = comma + 1;
  }
  return out;
}

std::optional<std::string> refusal(const redis::Reply* replies, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (replies[i].is_error() && replies[i].str().rfind("NOPERM", 0) == 0) {
      return "not readable with this ACL user (" + replies[i].str() + ")";
    }
  }
  return std::nullopt;
}

std::map<std::string, std::string> hscan_fields(const redis::ReplyView& reply) {
  std::map<std::string, std::string> out;
  if (!reply.is_array() || reply.size() != 2 || !reply.at(1).is_array()) return out;
  const redis::ReplyView fields = reply.at(1);
  for (size_t i = 0; i + 1 < fields.size(); i += 2)
    out[fields.at(i).str()] = fields.at(i + 1).str();
  return out;
}

std::string ttl_cell(long long ttl_ms) {
  return ttl_ms < 0 ? "-" : format_duration(Millis(ttl_ms));
}

}  // namespace rlock::inspect
