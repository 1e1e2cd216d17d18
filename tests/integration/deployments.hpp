// Redis deployments beyond one server, built from the harness's RedisServer: a Sentinel
// setup and a Cluster, each on free loopback ports in temporary directories, stopped (by
// pid, through RedisServer) when the object goes, also when a test fails half-way.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace rlock::test {

// A port for a cluster node: below 55536, so that its cluster bus port (port + 10000)
// exists, and free a moment ago together with that bus port.
int free_cluster_port();

struct SentinelSetupOptions {
  std::string master_name = "mymaster";
  // requirepass (and masterauth) of the master and the replica; empty: none.
  std::string data_password{};
  // requirepass of the sentinels, which then also authenticate to each other; empty: none.
  std::string sentinel_password{};
};

// One master, one replica and three sentinels that monitor the master (quorum 2,
// down-after-milliseconds 1000, failover-timeout 3000). The constructor returns once the
// replica is in sync and every sentinel knows the replica and the two other sentinels, so
// that a failover (forced or after the master's death) can start at once. Move-only.
class SentinelSetup {
 public:
  explicit SentinelSetup(SentinelSetupOptions options = {});

  // redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/NAME (no credentials).
  std::string url() const;
  const std::string& master_name() const { return options_.master_name; }
  const SentinelSetupOptions& options() const { return options_; }
  // Data node 0 starts as the master, 1 as its replica.
  RedisServer& data(size_t i) { return data_.at(i); }
  RedisServer& sentinel(size_t i) { return sentinels_.at(i); }
  size_t sentinel_count() const { return sentinels_.size(); }

  // The master's port as sentinel `i` names it (SENTINEL GET-MASTER-ADDR-BY-NAME).
  int port_named_by(size_t sentinel) const;
  // The data node the sentinels name, once all running ones agree and its ROLE says master
  // (waits for that at most `timeout`, else throws).
  RedisServer& current_master(std::chrono::milliseconds timeout = 10s);
  // SENTINEL FAILOVER on a running sentinel (after settle(), so that the former master of
  // an earlier failover is a replica it can pick), then waits until every running
  // sentinel names the other data node and its ROLE says master. Returns the new master.
  // The former master is left as it is: writable, and saying "master", until a sentinel
  // converts it (about 8 s: sentinels wait SENTINEL_PUBLISH_PERIOD * 4 before they
  // reconfigure a master that came back) or settle() does. Throws past `timeout`.
  RedisServer& failover(std::chrono::milliseconds timeout = 20s);
  // Makes every running data node but the current master an in-sync replica of it, known
  // as such to every running sentinel: what the sentinels would do by themselves a few
  // seconds later, done at once (REPLICAOF). Throws past `timeout`.
  void settle(std::chrono::milliseconds timeout = 20s);

  // How long the constructor took to bring everything up.
  std::chrono::milliseconds bring_up_time() const { return bring_up_; }

 private:
  // Waits until the sentinels all know `replica` as a healthy replica of the master and
  // know each other.
  void await_sentinels_ready(const RedisServer& replica, std::chrono::milliseconds timeout);

  SentinelSetupOptions options_;
  std::vector<RedisServer> data_;       // destroyed after the sentinels: no failover on
  std::vector<RedisServer> sentinels_;  // the way down
  std::chrono::milliseconds bring_up_{};
};

struct ClusterOptions {
  int masters = 3;
  int replicas_per_master = 1;
  // requirepass and masterauth of every node; empty: none.
  std::string password{};
};

// A Redis Cluster made by `redis-cli --cluster create` (cluster-node-timeout 1000). The
// constructor returns once every node says cluster_state:ok, knows every other node and
// agrees on the slot owners, and every replica is in sync. Move-only.
class ClusterSetup {
 public:
  explicit ClusterSetup(ClusterOptions options = {});

  // redis-cluster://127.0.0.1:P1,127.0.0.1:P2,... with every node (no credentials).
  std::string url() const;
  size_t size() const { return nodes_.size(); }
  RedisServer& node(size_t i) { return nodes_.at(i); }
  const ClusterOptions& options() const { return options_; }

  // The port of the master of every slot (0: none), according to node `asked`'s CLUSTER
  // NODES: the harness's own reading, independent of rlock's SlotMap.
  std::vector<int> slot_owner_ports(size_t asked = 0) const;
  // The node that serves `slot` as master now, according to node `asked` (CLUSTER NODES).
  RedisServer& master_of_slot(int slot, size_t asked = 0);
  // Nodes whose ROLE says master / replica now.
  std::vector<RedisServer*> masters();
  std::vector<RedisServer*> replicas();
  // The node listening on `port`; throws if none.
  RedisServer& node_on_port(int port);
  // CLUSTER FAILOVER on a replica of `master` (a running master of the cluster), then
  // waits until the replica says master, `master` says replica and the cluster has
  // converged. Returns it. A replica this promoted before is asked again only once Redis 7.0
  // no longer counts its won election (see the definition): within 4 s (with
  // cluster-node-timeout 1000) that waits.
  RedisServer& failover(RedisServer& master, std::chrono::milliseconds timeout = 20s);
  // Waits until every running node says cluster_state:ok and names the same master for
  // every slot; throws past `timeout`.
  void await_converged(std::chrono::milliseconds timeout = 20s);

  std::chrono::milliseconds bring_up_time() const { return bring_up_; }

 private:
  ClusterOptions options_;
  std::vector<RedisServer> nodes_;
  std::chrono::milliseconds bring_up_{};
  std::map<int, Clock::time_point> promoted_at_;  // port -> when failover() promoted it
};

// Fields of an INFO section reply as name -> value.
std::map<std::string, std::string> info_fields(const std::string& info);

}  // namespace rlock::test
