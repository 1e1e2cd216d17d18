#include "inspect/scan_stream.hpp"

#include <algorithm>
#include <future>
#include <optional>
#include <set>
#include <utility>

#include "redis/errors.hpp"
#include "redis/reply.hpp"
#include "util/error.hpp"
#include "util/one_line.hpp"

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

// `type`: only keys of that type (KeyLayout::scan_type), "" for any.
std::vector<std::string> scan_argv(const std::string& cursor, const std::string& pattern,
                                   const std::string& type) {
  std::vector<std::string> argv = {"SCAN",  cursor,  "MATCH",
                                   pattern, "COUNT", std::to_string(kScanCount)};
  if (!type.empty()) argv.insert(argv.end(), {"TYPE", type});
  return argv;
}

// The objects among the keys of one SCAN reply, sorted, each once. A key may be the main
// key of several types (under --layout redisson every object is a hash under its bare
// name): each of them reads it, and decodes it only when the values are its own.
std::vector<Pending> objects_in(const redis::ReplyView& keys, const prim::KeyLayout& layout,
                                const std::vector<const ObjectType*>& types) {
  std::vector<Pending> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string key = keys.at(i).str();
    for (const auto* t : types) {
      if (auto name = t->name_of(layout, key)) out.push_back({t, {std::move(*name), key}});
    }
  }
  auto order = [](const Pending& a, const Pending& b) {
    return std::tie(a.found.name, a.found.key, a.type) <
           std::tie(b.found.name, b.found.key, b.type);
  };
  std::sort(out.begin(), out.end(), order);
  out.erase(std::unique(out.begin(), out.end(),
                        [](const Pending& a, const Pending& b) {
                          return a.found.key == b.found.key && a.type == b.type;
                        }),
            out.end());
  return out;
}

// A refused TIME (an ACL without +time) ends the listing with exit 77, as a refused SCAN
// does: leases and tokens would otherwise print as null with nothing saying why.
BatchClock clock_from(const redis::ReplyView& time) {
  if (time.is_error()) throw redis::ReplyError(time.str());
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

namespace {

// scan_objects() on one server.
void scan_node(redis::Topology& topology, const prim::KeyLayout& layout, std::string_view name_glob,
               const std::vector<const ObjectType*>& types,
               const std::function<void(const std::vector<Shown>&)>& emit) {
  const std::string pattern = types.size() == 1 ? types[0]->key_pattern(layout, name_glob)
                                                : layout.any_key_pattern(name_glob);
  const std::string scan_type =
      types.size() == 1 ? layout.scan_type_of(types[0]->type()) : layout.scan_type();
  ScanBound bound(topology.command({"DBSIZE"}, redis::Retry::kIdempotent).integer());
  bound.check("0");
  auto first = scan_argv("0", pattern, scan_type);
  redis::Reply scan = topology.command({first.begin(), first.end()}, redis::Retry::kIdempotent);

  // What one batch sent: the next SCAN call (if the cursor goes on), then TIME and the
  // objects' reads (if it found any). Sends it at once.
  struct Sent {
    bool scan = false;
    std::vector<Pending> objects;
    size_t replies = 0;  // TIME and the reads
  };
  auto send_batch = [&](const redis::ReplyView& scan_reply) {
    Sent sent;
    std::string cursor = scan_reply.at(0).str();
    sent.objects = objects_in(scan_reply.at(1), layout, types);
    std::vector<std::vector<std::string>> cmds;
    if (cursor != "0") {
      bound.check(cursor);
      cmds.push_back(scan_argv(cursor, pattern, scan_type));
      sent.scan = true;
    }
    if (!sent.objects.empty()) {
      cmds.push_back({"TIME"});
      for (const auto& o : sent.objects) {
        for (auto& r : o.type->reads(layout, o.found)) cmds.push_back(std::move(r));
      }
      sent.replies = cmds.size() - (sent.scan ? 1 : 0);
    }
    if (!cmds.empty()) topology.send(cmds);
    return sent;
  };

  // The server answers batch k + 1 while batch k's replies are read, and batch k is
  // decoded and printed on another thread meanwhile: at most three batches in memory.
  std::future<void> decoding;
  Sent batch = send_batch(scan);
  while (batch.scan || !batch.objects.empty()) {
    Sent next;
    if (batch.scan) {
      auto reply = std::move(topology.receive(1).at(0));
      if (reply.is_error()) {
        topology.receive(batch.replies);  // keep the connection in step before throwing
        throw redis::ReplyError(reply.str());
      }
      next = send_batch(reply);
    }
    if (!batch.objects.empty()) {
      auto replies = topology.receive(batch.replies);
      if (decoding.valid()) decoding.get();  // in order, and its exception here
      decoding = std::async(std::launch::async, [&emit, objects = std::move(batch.objects),
                                                 replies = std::move(replies)]() mutable {
        emit(decode_batch(objects, replies, 0));
      });
    }
    batch = std::move(next);
  }
  if (decoding.valid()) decoding.get();
}

}  // namespace

namespace {

// Who holds it, as a member says (owners, counts, modes, notes; not the lease left nor
// the time it was acquired, which differ between members by the time between their
// answers).
Json holders_of(const Json& object) {
  Json out = Json::array();
  if (!object.contains("holders")) return out;
  for (const auto& h : object["holders"]) {
    Json one = h;
    one.erase("lease_ms");
    one.erase("acquired_at");
    out.push_back(one);
  }
  return out;
}

// The members' objects (member index, object) sorted by name, type and member, each
// saying whether a majority of the `members` agrees on who holds it.
std::vector<Shown> with_majority(std::vector<std::pair<size_t, Shown>>& all, size_t members,
                                 size_t answered) {
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    if (a.second.name != b.second.name) return a.second.name < b.second.name;
    return a.second.type->type() < b.second.type->type();
  });
  std::vector<Shown> out;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].second.name == all[i].second.name &&
           all[j].second.type == all[i].second.type) {
      ++j;
    }
    std::vector<Json> holders;
    for (size_t k = i; k < j; ++k) holders.push_back(holders_of(all[k].second.decoded.json));
    for (size_t k = i; k < j; ++k) {
      size_t agree = std::count(holders.begin(), holders.end(), holders[k - i]);
      // Members that answered without the object agree with an empty holder list.
      if (holders[k - i].empty()) agree += answered - (j - i);
      all[k].second.decoded.json["majority"] = agree > members / 2;
      out.push_back(std::move(all[k].second));
    }
    i = j;
  }
  return out;
}

// The members that did not answer, on stderr once per change (`inspect --watch` lists
// again and again).
void report_missing(const std::string& missing, size_t answered, size_t members) {
  static std::string reported;
  if (!missing.empty() && missing != reported) {
    print_diagnostic("inspect lists " + std::to_string(answered) + " of the " +
                     std::to_string(members) + " quorum members; not answering (counted as " +
                     "not agreeing): " + missing);
  }
  reported = missing;
}

using Emit = std::function<void(const std::vector<Shown>&)>;
// What is read of one server: a scan, or one named object.
using NodeReader = std::function<void(redis::Topology& node, const Emit& emit)>;

// A quorum: every member is listed (its objects tagged with "member"), and each object says
// whether a majority of the members agrees on who holds it ("majority"). The listing is
// read whole first, members in URL order; it comes out sorted by name, type and member.
void on_quorum(redis::Topology& topology, const NodeReader& read_node, const Emit& emit) {
  const size_t members = topology.quorum_members().size();
  std::vector<std::pair<size_t, Shown>> all;
  size_t member = 0, answered = 0;
  std::string missing;
  // A quorum outlives a member, and so does its listing: a member that does not answer
  // (down, frozen past --timeout) is named on stderr and agrees with nobody; fewer than a
  // majority answering leaves nothing to say about a majority (exit 69).
  const std::vector<std::string> silent = topology.silent_quorum_members();
  topology.for_each_master([&](redis::Topology& node) {
    std::vector<std::pair<size_t, Shown>> listed;
    if (!silent[member].empty()) {  // not waited for again, member after member
      missing += (missing.empty() ? "" : "; ") + node.options().endpoint.describe() + ": " +
                 silent[member];
      ++member;
      return;
    }
    try {
      std::string name = node.server_name();
      read_node(node, [&](const std::vector<Shown>& batch) {
        for (const Shown& shown : batch) {
          listed.emplace_back(member, shown);
          listed.back().second.decoded.json["member"] = name;
        }
      });
      all.insert(all.end(), std::make_move_iterator(listed.begin()),
                 std::make_move_iterator(listed.end()));
      ++answered;
    } catch (const UnavailableError& e) {
      missing += (missing.empty() ? "" : "; ") + std::string(e.what());
    }
    ++member;
  });
  if (answered <= members / 2) {
    throw UnavailableError("fewer than a majority of the " + std::to_string(members) +
                           " quorum members answered (" + missing + ")");
  }
  report_missing(missing, answered, members);
  emit(with_majority(all, members, answered));
}

}  // namespace

void scan_objects(redis::Topology& topology, const prim::KeyLayout& layout,
                  std::string_view name_glob, const std::vector<const ObjectType*>& types,
                  const std::function<void(const std::vector<Shown>&)>& emit) {
  auto scan = [&](redis::Topology& node, const Emit& to) {
    scan_node(node, layout, name_glob, types, to);
  };
  if (!topology.quorum_members().empty()) return on_quorum(topology, scan, emit);
  // Every object lives on one master (its hash tag's slot): each master is scanned once.
  topology.for_each_master([&](redis::Topology& node) { scan(node, emit); });
}

void read_object(redis::Topology& topology, const prim::KeyLayout& layout, const ObjectType& type,
                 const Found& object, const std::function<void(const std::vector<Shown>&)>& emit) {
  auto read = [&](redis::Topology& node, const Emit& to) {
    std::vector<std::vector<std::string>> cmds = {{"TIME"}};
    for (auto& cmd : type.reads(layout, object)) cmds.push_back(std::move(cmd));
    const auto replies = node.pipeline(cmds, redis::Retry::kIdempotent, object.key);
    std::vector<Pending> one = {{&type, object}};
    to(decode_batch(one, replies, 0));
  };
  if (!topology.quorum_members().empty()) return on_quorum(topology, read, emit);
  read(topology, emit);
}

}  // namespace rlock::inspect
