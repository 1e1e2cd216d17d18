#include "inspect/lock_view.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "redis/reply.hpp"
#include "util/error.hpp"

namespace rlock::inspect {
namespace {

constexpr const char* kScanBatch = "1000";
constexpr size_t kReadsPerLock = 4;

// SCAN visits every key in about DBSIZE / COUNT calls; a server whose cursor never comes
// back to 0 (or comes back to one it gave before) is not answering SCAN as Redis does.
std::vector<std::string> scan_keys(redis::Topology& topology, const std::string& pattern) {
  std::set<std::string> keys;  // SCAN may return a key twice
  std::set<std::string> cursors;
  long long dbsize =
      std::max<long long>(topology.command({"DBSIZE"}, redis::Retry::kIdempotent).integer(), 0);
  const long long max_calls = dbsize / std::stoll(kScanBatch) * 4 + 1000;
  std::string cursor = "0";
  long long calls = 0;
  do {
    if (++calls > max_calls || (cursor != "0" && !cursors.insert(cursor).second)) {
      throw DataError("redis did not finish SCAN after " + std::to_string(calls - 1) +
                      " calls for " + std::to_string(dbsize) + " keys (cursor " + cursor +
                      "); the server is not answering as Redis does");
    }
    auto reply = topology.command({"SCAN", cursor, "MATCH", pattern, "COUNT", kScanBatch},
                                  redis::Retry::kIdempotent);
    cursor = reply.at(0).str();
    auto batch = reply.at(1);
    for (size_t i = 0; i < batch.size(); ++i) keys.insert(batch.at(i).str());
  } while (cursor != "0");
  return {keys.begin(), keys.end()};
}

// Fills one view from the replies of HGETALL, PTTL, GET fence, ZCARD waiters.
std::optional<LockView> decode(LockView v, const redis::Reply* r) {
  for (int i = 0; i < 4; ++i) {
    if (r[i].is_error() && r[i].str().rfind("NOPERM", 0) == 0) {
      v.error = "not readable with this ACL user (" + r[i].str() + ")";
      return v;
    }
  }
  if (r[0].is_error()) {
    v.error = "key holds another type than a lock hash";
  } else {
    if (r[0].size() == 0) return std::nullopt;  // expired since SCAN saw it
    try {
      v.holders = prim::decode_holders(r[0], 0, v.key);
    } catch (const DataError&) {
      v.error = "hash whose values are not reentry counts: not a lock";
    }
  }
  v.ttl_ms = r[1].is_integer() ? r[1].integer() : -1;
  if (r[2].is_string()) {
    try {
      v.fence = r[2].integer();
    } catch (const std::exception&) {
      v.error = "fencing token is not a number";
    }
  }
  if (r[3].is_integer()) v.waiters = r[3].integer();
  return v;
}

}  // namespace

std::vector<LockView> scan_locks(redis::Topology& topology, const prim::KeyLayout& layout,
                                 std::string_view name_glob) {
  std::vector<LockView> found;
  std::vector<std::vector<std::string>> reads;
  for (auto& key : scan_keys(topology, layout.lock_key_pattern(name_glob))) {
    auto name = layout.lock_name(key);
    if (!name) continue;
    reads.push_back({"HGETALL", key});
    reads.push_back({"PTTL", key});
    reads.push_back({"GET", layout.fence_key(*name)});
    reads.push_back({"ZCARD", layout.waiters_key(*name)});
    LockView v;
    v.name = *name;
    v.key = std::move(key);
    found.push_back(std::move(v));
  }
  auto replies = topology.pipeline(reads);
  std::vector<LockView> views;
  for (size_t i = 0; i < found.size(); ++i) {
    if (auto v = decode(std::move(found[i]), &replies[i * kReadsPerLock]))
      views.push_back(std::move(*v));
  }
  std::sort(views.begin(), views.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return views;
}

}  // namespace rlock::inspect
