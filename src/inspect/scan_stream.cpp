#include "inspect/scan_stream.hpp"

#include <algorithm>
#include <future>
#include <optional>
#include <set>
#include <utility>

#include "redis/reply.hpp"
#include "util/error.hpp"

namespace rlock::inspect {
namespace {

constexpr long long kScanCount = 1000;

// SCAN visits every key in about DBSIZE / COUNT calls; a server whose cursor never comes
// back to 0 (or comes back to one it gave before) is not answering SCAN as Redis does.
class ScanBound {
 public:
  explicit ScanBound(long long dbsize)
      : dbsize_(std::max(dbsize, 0LL)), max_calls_(dbsize_ / kScanCount * 4 + 1000) {}

  // Called before each SCAN call with the cursor it sends.
  void check(const std::string& cursor) {
    if (++calls_ > max_calls_ || (cursor != "0" && !cursors_.insert(cursor).second)) {
      throw DataError("redis did not finish SCAN after " + std::to_string(calls_ - 1) +
                      " calls for " + std::to_string(dbsize_) + " keys (cursor " + cursor +
                      "); the server is not answering as Redis does");
    }
  }

 private:
  long long dbsize_;
  long long max_calls_;
  long long calls_ = 0;
  std::set<std::string> cursors_;  // at most max_calls_ short strings
};

struct Pending {
  const ObjectType* type;
  Found found;
};

std::vector<std::string> scan_argv(const std::string& cursor, const std::string& pattern) {
  return {"SCAN", cursor, "MATCH", pattern, "COUNT", std::to_string(kScanCount)};
}

// The objects among the keys of one SCAN reply, sorted, each once.
std::vector<Pending> objects_in(const redis::ReplyView& keys, const prim::KeyLayout& layout,
                                const std::vector<const ObjectType*>& types) {
  std::vector<Pending> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string key = keys.at(i).str();
    for (const auto* t : types) {
      if (auto name = t->name_of(layout, key)) {
        out.push_back({t, {std::move(*name), std::move(key)}});
        break;
      }
    }
  }
  auto order = [](const Pending& a, const Pending& b) {
    return std::tie(a.found.name, a.found.key) < std::tie(b.found.name, b.found.key);
  };
  std::sort(out.begin(), out.end(), order);
  out.erase(
      std::unique(out.begin(), out.end(),
                  [](const Pending& a, const Pending& b) { return a.found.key == b.found.key; }),
      out.end());
  return out;
}

BatchClock clock_from(const redis::ReplyView& time) {
  BatchClock c;
  if (time.is_array() && time.size() == 2) {
    try {
      c.now_us = time.at(0).integer() * 1000000 + time.at(1).integer();
    } catch (const DataError&) {
    }
  }
  return c;
}

// The objects of one batch from their replies: TIME at `first`, then each object's reads.
std::vector<Shown> decode_batch(std::vector<Pending>& objects,
                                const std::vector<redis::Reply>& replies, size_t first) {
  size_t at = first;
  const BatchClock clock = clock_from(replies.at(at++));
  std::vector<Shown> shown;
  for (auto& o : objects) {
    if (at + o.type->read_count() > replies.size()) break;
    if (auto d = o.type->decode(o.found, &replies[at], clock)) {
      shown.push_back({o.type, std::move(o.found.name), std::move(*d)});
    }
    at += o.type->read_count();
  }
  return shown;
}

}  // namespace

void scan_objects(redis::Topology& topology, const prim::KeyLayout& layout,
                  std::string_view name_glob, const std::vector<const ObjectType*>& types,
                  const std::function<void(const std::vector<Shown>&)>& emit) {
  const std::string pattern = types.size() == 1 ? types[0]->key_pattern(layout, name_glob)
                                                : layout.any_key_pattern(name_glob);
  ScanBound bound(topology.command({"DBSIZE"}, redis::Retry::kIdempotent).integer());
  std::string cursor = "0";
  bound.check(cursor);
  auto argv = scan_argv(cursor, pattern);
  redis::Reply scan = topology.command({argv.begin(), argv.end()}, redis::Retry::kIdempotent);
  // Batch k is decoded and printed on another thread while the server answers batch k + 1:
  // about twice as fast as taking turns, with at most two batches in memory.
  std::future<void> decoding;
  for (;;) {
    cursor = scan.at(0).str();
    const bool more = cursor != "0";
    auto objects = objects_in(scan.at(1), layout, types);
    std::vector<std::vector<std::string>> cmds;
    if (more) {
      bound.check(cursor);
      cmds.push_back(scan_argv(cursor, pattern));
    }
    if (objects.empty()) {
      if (!more) break;
      scan = topology.command({cmds[0].begin(), cmds[0].end()}, redis::Retry::kIdempotent);
      continue;
    }
    cmds.push_back({"TIME"});
    for (const auto& o : objects) {
      for (auto& r : o.type->reads(layout, o.found)) cmds.push_back(std::move(r));
    }
    auto replies = topology.pipeline(cmds);
    std::optional<redis::Reply> next;
    if (more) next.emplace(std::move(replies[0]));
    if (decoding.valid()) decoding.get();  // in order, and its exception here
    decoding = std::async(std::launch::async,
                          [&emit, objects = std::move(objects), replies = std::move(replies),
                           first = more ? size_t{1} : size_t{0}]() mutable {
                            emit(decode_batch(objects, replies, first));
                          });
    if (!more) break;
    // A refused SCAN is sent again alone, so that its error is thrown as every command's.
    scan = next->is_error()
               ? topology.command({cmds[0].begin(), cmds[0].end()}, redis::Retry::kIdempotent)
               : std::move(*next);
  }
  if (decoding.valid()) decoding.get();
}

}  // namespace rlock::inspect
