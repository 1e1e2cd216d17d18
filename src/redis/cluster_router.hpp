#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "redis/router.hpp"
#include "redis/slot_map.hpp"

namespace rlock::redis {

// The nodes of a Redis Cluster: one connection per node, opened when a request first goes
// there. A process does not fetch the slot map before its first request (one round trip
// more for every short-lived `rlock exec`): it sends a request to the seed, and a MOVED
// names the owner of that slot, remembered for the next requests. The whole map (CLUSTER
// SHARDS) is fetched to find every master (inspect), and from another node when a slot's
// owner refuses the connection (a dead master: its replica takes over within a second or
// two) or a waiter checks that its frozen server still serves.
class ClusterRouter : public Router {
 public:
  // `target`: a Cluster URL's seeds, or a standalone server found to be a cluster node
  // (StandaloneRouter), the one seed as its URL names it.
  explicit ClusterRouter(Target target);
  // Keeps `conn`, open to a seed, as that node's connection.
  void adopt_seed(Connection conn);

  Connection& connection_for(std::string_view key, const ConnectOptions& options) override;
  Endpoint endpoint_for(std::string_view key, const ConnectOptions& options) override;
  std::optional<Endpoint> known_endpoint_for(std::string_view key) const override;
  Next after_error(std::string_view key, const ReplyError& e, Deadline until,
                   const ConnectOptions& options, int round) override;
  void drop_broken() override;
  void set_timeout(Millis timeout) override;
  std::vector<Endpoint> masters(const ConnectOptions& options) override;
  bool cluster() const override { return true; }
  // A frozen master keeps its subscribers after its replica took over, and nothing is
  // published there any more: a waiter asks another node once a second.
  Millis recheck_every() const override { return Millis(1000); }
  // False when another node's slot map no longer has `server` as a master.
  bool still_serves(const Endpoint& server) override;

 private:
  // The node at `ep`'s connection, opened when absent or broken.
  Connection& node(const Endpoint& ep, const ConnectOptions& options);
  // The first seed that accepts a connection (in turn: a seed that is down is skipped).
  Connection& seed(const ConnectOptions& options);
  Endpoint seed_endpoint(size_t i) const;
  Endpoint endpoint_of(const NodeAddress& a) const { return target_.endpoint.at(a.host, a.port); }
  // The slot's master as the last redirect or the last fetched map said.
  const NodeAddress* owner_of(int slot) const;
  // The slot map as a node other than `avoid` (host:port) sees it, asked within `options`'
  // timeouts: the seeds from the current one on, then the nodes of the last map; nullopt
  // when none answers.
  std::optional<SlotMap> map_without(const std::string& avoid, const ConnectOptions& options);
  // Uses `map` from now on; `gone` (not a master there) is no longer connected to.
  void adopt(SlotMap map, const std::string& gone);

  Target target_;
  std::map<std::string, Connection> nodes_;      // by Endpoint::describe()
  std::unordered_map<int, NodeAddress> owners_;  // slot -> master, as redirects said
  std::optional<SlotMap> map_;                   // fetched after a failure; owners_ is newer
  ConnectOptions options_;                       // of the last endpoint_for (still_serves)
  size_t seed_ = 0;                              // the seed that answered last
};

}  // namespace rlock::redis
