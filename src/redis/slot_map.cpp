#include "redis/slot_map.hpp"

#include <algorithm>
#include <charconv>

#include "redis/errors.hpp"
#include "redis/slot.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

DataError bad_reply(std::string_view command, std::string_view why) {
  return DataError("redis answered " + std::string(command) + " with a reply Redis never gives (" +
                   std::string(why) + ")");
}

// "?" (unknown endpoint), "" and nil all mean: the host the question went to.
std::string host_or_asked(ReplyView host, std::string_view asked_host) {
  std::string h = host.is_nil() ? std::string() : host.str();
  return h.empty() || h == "?" ? std::string(asked_host) : h;
}

int slot_number(ReplyView v, std::string_view command) {
  long long slot = v.integer();
  if (slot < 0 || slot >= kSlotCount) throw bad_reply(command, "a slot out of range");
  return static_cast<int>(slot);
}

// One node of a CLUSTER SHARDS shard: a flat array of field names and values.
struct ShardNode {
  NodeAddress address;
  bool master = false;
  // Failed (health "fail"). Not the same as not "online": 7.0 reports a replica whose
  // offset is 0 (the master never had a write) as "loading" however long it has been in sync.
  bool failed = false;
};

ShardNode shard_node(ReplyView fields, std::string_view asked_host, bool tls) {
  ShardNode node;
  int tls_port = 0;
  std::string ip, endpoint;
  bool have_endpoint = false;
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    std::string name = fields.at(i).str();
    ReplyView value = fields.at(i + 1);
    if (name == "id") node.address.id = value.str();
    if (name == "port") node.address.port = static_cast<int>(value.integer());
    if (name == "tls-port") tls_port = static_cast<int>(value.integer());
    if (name == "ip") ip = value.str();
    if (name == "endpoint") {
      endpoint = value.is_nil() ? std::string() : value.str();
      have_endpoint = true;
    }
    if (name == "role") node.master = value.str() == "master";
    if (name == "health") node.failed = value.str() == "fail";
  }
  // The endpoint is the address the cluster asks clients to use (ip, hostname or unknown).
  if (have_endpoint && !endpoint.empty() && endpoint != "?") {
    node.address.host = endpoint;
  } else {
    node.address.host = ip.empty() || ip == "?" ? std::string(asked_host) : ip;
  }
  // A client over TLS is served on the TLS port (the plain one may be off: port 0).
  if (tls && tls_port != 0) node.address.port = tls_port;
  if (node.address.port <= 0 || node.address.port > 65535)
    throw bad_reply("CLUSTER SHARDS", "a node without a TCP port");
  return node;
}

}  // namespace

std::string NodeAddress::describe() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void SlotMap::add(SlotRange range) {
  if (range.first > range.last) throw bad_reply("CLUSTER SHARDS/SLOTS", "a reversed slot range");
  ranges_.push_back(std::move(range));
}

void SlotMap::finish() {
  std::sort(ranges_.begin(), ranges_.end(),
            [](const SlotRange& a, const SlotRange& b) { return a.first < b.first; });
  for (size_t i = 1; i < ranges_.size(); ++i) {
    if (ranges_[i].first <= ranges_[i - 1].last)
      throw bad_reply("CLUSTER SHARDS/SLOTS", "overlapping slot ranges");
  }
}

SlotMap SlotMap::from_shards(ReplyView reply, std::string_view asked_host, bool tls) {
  constexpr std::string_view kCommand = "CLUSTER SHARDS";
  if (!reply.is_array()) throw bad_reply(kCommand, "not an array");
  SlotMap map;
  for (size_t s = 0; s < reply.size(); ++s) {
    ReplyView shard = reply.at(s);
    std::optional<ReplyView> slots, nodes;
    for (size_t i = 0; i + 1 < shard.size(); i += 2) {
      std::string name = shard.at(i).str();
      if (name == "slots") slots = shard.at(i + 1);
      if (name == "nodes") nodes = shard.at(i + 1);
    }
    if (!slots || !nodes) throw bad_reply(kCommand, "a shard without slots or nodes");
    if (slots->size() == 0) continue;  // replicas of a master that serves no slot
    if (slots->size() % 2) throw bad_reply(kCommand, "an odd number of slot bounds");
    // A failed master may still be listed as one beside the replica that replaced it:
    // the one that has not failed wins.
    std::optional<ShardNode> master;
    std::vector<NodeAddress> replicas;
    for (size_t n = 0; n < nodes->size(); ++n) {
      ShardNode node = shard_node(nodes->at(n), asked_host, tls);
      if (node.master && (!master || (master->failed && !node.failed))) {
        master = node;
      } else if (!node.master && !node.failed) {
        replicas.push_back(node.address);
      }
    }
    if (!master) continue;  // no node of the shard says master: its slots are not served
    for (size_t i = 0; i < slots->size(); i += 2) {
      map.add({slot_number(slots->at(i), kCommand), slot_number(slots->at(i + 1), kCommand),
               master->address, replicas});
    }
  }
  map.finish();
  return map;
}

SlotMap SlotMap::from_slots(ReplyView reply, std::string_view asked_host) {
  constexpr std::string_view kCommand = "CLUSTER SLOTS";
  if (!reply.is_array()) throw bad_reply(kCommand, "not an array");
  SlotMap map;
  for (size_t r = 0; r < reply.size(); ++r) {
    // [first, last, [host, port, id, ...] (master), [host, port, id, ...] (replicas)...]
    ReplyView entry = reply.at(r);
    if (entry.size() < 3) throw bad_reply(kCommand, "a range without a master");
    SlotRange range{slot_number(entry.at(0), kCommand), slot_number(entry.at(1), kCommand), {}, {}};
    for (size_t n = 2; n < entry.size(); ++n) {
      ReplyView node = entry.at(n);
      if (node.size() < 2) throw bad_reply(kCommand, "a node without host and port");
      NodeAddress address{host_or_asked(node.at(0), asked_host),
                          static_cast<int>(node.at(1).integer()),
                          node.size() > 2 ? node.at(2).str() : std::string()};
      if (n == 2) {
        range.master = std::move(address);
      } else {
        range.replicas.push_back(std::move(address));
      }
    }
    map.add(std::move(range));
  }
  map.finish();
  return map;
}

SlotMap SlotMap::fetch(Connection& conn) {
  const std::string& host = conn.options().endpoint.host;
  try {
    ReplyPtr reply = conn.command({"CLUSTER", "SHARDS"});
    return from_shards(ReplyView(reply.get()), host, conn.options().tls != nullptr);
  } catch (const ReplyError& e) {
    // Redis 6 answers "ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP." (words no
    // server keeps): any ERR asks CLUSTER SLOTS, whose own refusal is the answer.
    if (e.code() != "ERR") throw;
  }
  ReplyPtr reply = conn.command({"CLUSTER", "SLOTS"});
  return from_slots(ReplyView(reply.get()), host);
}

const SlotRange* SlotMap::range_of(int slot) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), slot,
                             [](int s, const SlotRange& r) { return s < r.first; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return slot <= it->last ? &*it : nullptr;
}

const NodeAddress* SlotMap::master_of(int slot) const {
  const SlotRange* range = range_of(slot);
  return range ? &range->master : nullptr;
}

std::vector<NodeAddress> SlotMap::masters() const {
  std::vector<NodeAddress> out;
  for (const SlotRange& r : ranges_) {
    bool seen = std::any_of(out.begin(), out.end(),
                            [&](const NodeAddress& a) { return a.same_address(r.master); });
    if (!seen) out.push_back(r.master);
  }
  return out;
}

bool SlotMap::complete() const {
  int next = 0;
  for (const SlotRange& r : ranges_) {
    if (r.first != next) return false;
    next = r.last + 1;
  }
  return next == kSlotCount;
}

std::optional<Redirect> parse_redirect(std::string_view error, std::string_view asked_host) {
  Redirect out;
  if (error.substr(0, 6) == "MOVED ") {
    out.kind = Redirect::Kind::kMoved;
    error.remove_prefix(6);
  } else if (error.substr(0, 4) == "ASK ") {
    out.kind = Redirect::Kind::kAsk;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  size_t space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view slot = error.substr(0, space), address = error.substr(space + 1);
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view port = address.substr(colon + 1);
  auto parse = [](std::string_view text, int& value) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && end == text.data() + text.size();
  };
  if (!parse(slot, out.slot) || out.slot < 0 || out.slot >= kSlotCount) return std::nullopt;
  if (!parse(port, out.to.port) || out.to.port <= 0 || out.to.port > 65535) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  out.to.host = host.empty() ? std::string(asked_host) : std::string(host);
  return out;
}

}  // namespace rlock::redis
