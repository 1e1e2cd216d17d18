#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/reply.hpp"

namespace rlock::redis {

// A cluster node as the cluster names it (no credentials: see Endpoint::at).
struct NodeAddress {
  std::string host;
  int port = 0;
  std::string id;  // node id; empty when the reply gave none (MOVED)

  // `host:port`, for messages.
  std::string describe() const;
  // Same address (the id is not compared: a redirect carries none).
  bool same_address(const NodeAddress& other) const {
    return host == other.host && port == other.port;
  }
};

// A run of slots and the nodes that serve it.
struct SlotRange {
  int first = 0;  // inclusive
  int last = 0;   // inclusive
  NodeAddress master;
  std::vector<NodeAddress> replicas;  // replicas not marked failed
};

// Which master serves each slot of a cluster, as one node saw it. Copyable; a Topology
// keeps one and fetches a new one when a MOVED says it is stale.
class SlotMap {
 public:
  // A map that serves no slot.
  SlotMap() = default;

  // Builds the map from a reply of CLUSTER SHARDS (Redis 7) or CLUSTER SLOTS, given by a
  // node reached at `asked_host`: a node whose endpoint is unknown ("?", "" or nil) is on
  // that host. Throws DataError for a reply Redis never gives. With `tls`, a node's
  // tls-port (when it has one) is its port.
  static SlotMap from_shards(ReplyView reply, std::string_view asked_host, bool tls = false);
  static SlotMap from_slots(ReplyView reply, std::string_view asked_host);
  // Asks the node `conn` is connected to: CLUSTER SHARDS, or CLUSTER SLOTS when the server
  // does not know SHARDS (before 7.0). Throws what the connection throws (a server without
  // cluster support answers ReplyError "ERR This instance has cluster support disabled").
  static SlotMap fetch(Connection& conn);

  // The range that holds `slot` (0 to kSlotCount - 1), or nullptr when no node serves it.
  const SlotRange* range_of(int slot) const;
  // The master that serves `slot`, or nullptr when none does.
  const NodeAddress* master_of(int slot) const;
  // Every master that serves a slot, each once, in slot order: what a scan of all keys
  // visits.
  std::vector<NodeAddress> masters() const;
  // True when every slot has a master.
  bool complete() const;
  const std::vector<SlotRange>& ranges() const { return ranges_; }

 private:
  void add(SlotRange range);
  void finish();  // sorts the ranges and refuses overlaps

  std::vector<SlotRange> ranges_;  // sorted by first, disjoint
};

// A cluster's redirection of one command.
struct Redirect {
  enum class Kind { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  int slot = 0;
  NodeAddress to;
};

// Parses the error reply `MOVED 3999 127.0.0.1:6381` or `ASK 3999 127.0.0.1:6381` (also an
// IPv6 host, whose last ':' starts the port). An empty host (`MOVED 3999 :6381`, sent when
// the node's endpoint is unknown) is `asked_host`, the host of the node that replied.
// nullopt for any other reply.
std::optional<Redirect> parse_redirect(std::string_view error, std::string_view asked_host);

}  // namespace rlock::redis
