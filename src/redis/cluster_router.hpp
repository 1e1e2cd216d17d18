#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "redis/router.hpp"
#include "redis/slot_map.hpp"

namespace rlock::redis {

// A standalone server, or the nodes of a Redis Cluster: one connection per node, opened
// when a request first goes there. A process does not fetch the slot map before its first
// request (one round trip more for every short-lived `rlock exec`): it sends a request to
// the seed, and a MOVED names the owner of that slot, remembered for the next requests.
// The whole map (CLUSTER SHARDS) is fetched only to find every master (inspect). A
// standalone target that answers MOVED is a cluster node: it becomes the seed.
class ClusterRouter : public Router {
 public:
  ClusterRouter(Target target, std::function<void(const std::string&)> notice);

  Connection& connection_for(std::string_view key, const ConnectOptions& options) override;
  Endpoint endpoint_for(std::string_view key, const ConnectOptions& options) override;
  std::optional<Endpoint> known_endpoint_for(std::string_view key) const override;
  Next after_error(std::string_view key, const ReplyError& e, Deadline until,
                   const ConnectOptions& options, int round) override;
  void drop_broken() override;
  void set_timeout(Millis timeout) override;
  std::vector<Endpoint> masters(const ConnectOptions& options) override;
  bool cluster() const override { return cluster_; }

 private:
  // The node at `ep`'s connection, opened when absent or broken.
  Connection& node(const Endpoint& ep, const ConnectOptions& options);
  // The first seed that accepts a connection (in turn: a seed that is down is skipped).
  Connection& seed(const ConnectOptions& options);
  void became_cluster(const std::string& why);
  Endpoint seed_endpoint(size_t i) const;

  Target target_;
  std::function<void(const std::string&)> notice_;
  bool cluster_;
  std::map<std::string, Connection> nodes_;      // by Endpoint::describe()
  std::unordered_map<int, NodeAddress> owners_;  // slot -> master, as redirects said
  size_t seed_ = 0;                              // the seed that answered last
};

}  // namespace rlock::redis
