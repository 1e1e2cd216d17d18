#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prim/key_layout.hpp"
#include "redis/reply.hpp"

namespace rlock::inspect {

using Json = nlohmann::ordered_json;  // fields in the documented order

// One object found by SCAN: its type's main key and the name it decodes to.
struct Found {
  std::string name;
  std::string key;
};

// Server time read once per batch (TIME), for ages such as how long a waiter has waited.
struct BatchClock {
  std::optional<long long> now_us;  // nullopt: TIME's reply was malformed; ages print as null
};

// The cells of one row of `--format table` besides TYPE and NAME. Raw text: the table
// escapes every cell with one_line.
struct TableCells {
  std::string holders;  // HOLDERS/COUNT: who holds it, or how much is left
  std::string ttl;      // TTL: time left before the object expires, "-" for none
  std::string fence;    // FENCE: fencing token, "-" when the type has none
  std::string waiters;  // WAITERS: how many wait for it
};

// What inspect shows of one object.
struct Decoded {
  Decoded(Json j, TableCells c, std::vector<std::string> details = {})
      : json(std::move(j)), cells(std::move(c)), detail_lines(std::move(details)) {}
  Json json;  // {"type", "name", "key", ...type's fields..., "error"?}
  TableCells cells;
  std::vector<std::string> detail_lines;  // printed under the table row as they are (runs)
};

// One object type of `rlock inspect`: the only place that knows how the type is stored and
// shown. Adding a type is one subclass plus one line in object_types(). The main key of
// every type has the shape prefix + word + ":" + tag (see KeyLayout), so that one SCAN
// pass finds all types at once.
class ObjectType {
 public:
  virtual ~ObjectType() = default;

  // The value of the "type" field and of --type, e.g. "lock".
  virtual std::string_view type() const = 0;
  // The fields of its JSON object for `rlock help inspect`, e.g. {"type":"lock","name",...}.
  virtual std::string_view json_shape() const = 0;
  // SCAN MATCH pattern for this type's main keys whose names match `name_glob`.
  virtual std::string key_pattern(const prim::KeyLayout& layout,
                                  std::string_view name_glob) const = 0;
  // The object's name when `key` is this type's main key; nullopt for any other key.
  virtual std::optional<std::string> name_of(const prim::KeyLayout& layout,
                                             std::string_view key) const = 0;
  // The read-only commands that read one object, pipelined with the rest of its batch;
  // always read_count() of them.
  virtual std::vector<std::vector<std::string>> reads(const prim::KeyLayout& layout,
                                                      const Found& object) const = 0;
  virtual size_t read_count() const = 0;
  // The object from its read_count() replies (in the order of reads()); nullopt when it
  // vanished since SCAN saw it. Never throws on what the server stored: a key that is not
  // well-formed, or not readable, is shown with an "error" field.
  virtual std::optional<Decoded> decode(const Found& object, const redis::Reply* replies,
                                        const BatchClock& clock) const = 0;
};

// Every type inspect knows, in the order of `--type` help.
const std::vector<const ObjectType*>& object_types();

// The types named in a comma-separated --type list ("" = all); throws UsageError naming
// an unknown type and the known ones.
std::vector<const ObjectType*> select_types(std::string_view list);

// Shared by decoders. The error text for a key that is not readable with this ACL user,
// when any of `n` replies is a NOPERM refusal.
std::optional<std::string> refusal(const redis::Reply* replies, size_t n);
// The fields and values of an HSCAN reply (a notes hash: what holds say of themselves);
// empty for any other reply (not a hash, refused): notes decide nothing.
std::map<std::string, std::string> hscan_fields(const redis::ReplyView& reply);
// "-" for no expiry (ttl_ms < 0), else "25s", "4m".
std::string ttl_cell(long long ttl_ms);
// Most entries of a list an object shows in full (waiters, latch ids); the total is shown
// beside it, so that one huge object cannot blow the memory bound.
inline constexpr long long kMaxListed = 100;

}  // namespace rlock::inspect
