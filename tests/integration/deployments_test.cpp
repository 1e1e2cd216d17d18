// The Sentinel and Cluster deployments of the harness, and the pieces of rlock's redis
// layer that find servers in them: key slots, the slot map, redirects, the sentinel
// resolver. Each checked against what the servers themselves say.
#include "deployments.hpp"

#include <doctest/doctest.h>

#include <set>

#include "redis/connection.hpp"
#include "redis/errors.hpp"
#include "redis/sentinel.hpp"
#include "redis/slot.hpp"
#include "redis/slot_map.hpp"
#include "redis/url.hpp"

namespace rlock::test {
namespace {

using redis::Connection;
using redis::ConnectOptions;
using redis::SlotMap;

ConnectOptions options_for(const RedisServer& server, const std::string& password = "") {
  ConnectOptions o;
  o.endpoint = redis::parse_url(server.url());
  o.endpoint.password = password;
  o.connect_timeout = rlock::Millis(2000);
  o.command_timeout = rlock::Millis(5000);
  return o;
}

std::vector<std::string> sample_keys() {
  std::vector<std::string> keys{"foo",
                                "bar",
                                "123456789",
                                "{user1000}.following",
                                "user1000",
                                "foo{}{bar}",
                                "foo{{bar}}zap",
                                "foo{bar}{zap}",
                                "{",
                                "}{",
                                "{}",
                                "a{b}c{d}",
                                "\xff\xfe{x}",
                                "rlock:lock:{deploy}:fence"};
  for (int i = 0; i < 300; ++i) keys.push_back("rlock:lock:{name-" + std::to_string(i) + "}");
  return keys;
}

// The master's port that the replica on `replica` follows (INFO replication).
int master_port_of(const RedisServer& replica) {
  return std::stoi(info_fields(replica.cmd_str({"INFO", "replication"}))["master_port"]);
}

TEST_CASE("cluster: key slots, the slot map from every node, MOVED and ASK match the servers") {
  ClusterSetup cluster;
  MESSAGE("cluster of 3 masters + 3 replicas up in " << cluster.bring_up_time().count() << " ms");
  REQUIRE(cluster.masters().size() == 3);
  REQUIRE(cluster.replicas().size() == 3);

  for (const std::string& key : sample_keys()) {
    CAPTURE(key);
    CHECK(redis::key_slot(key) == cluster.node(0).cmd_int({"CLUSTER", "KEYSLOT", key}));
  }

  const std::vector<int> owners = cluster.slot_owner_ports();
  std::set<int> master_ports;
  for (RedisServer* m : cluster.masters()) master_ports.insert(m->port());
  for (size_t i = 0; i < cluster.size(); ++i) {
    CAPTURE(i);
    Connection conn = Connection::open(options_for(cluster.node(i)));
    SlotMap map = SlotMap::fetch(conn);
    // A node learns the other masters' replicas by gossip, a moment after the cluster is up.
    auto every_range_has_its_replica = [&] {
      map = SlotMap::fetch(conn);
      for (const auto& range : map.ranges())
        if (range.replicas.size() != 1) return false;
      return true;
    };
    REQUIRE(poll_until(every_range_has_its_replica, 10s));
    REQUIRE(map.complete());
    std::set<int> ports;
    for (const auto& m : map.masters()) ports.insert(m.port);
    CHECK(ports == master_ports);
    int mismatches = 0;
    for (int slot = 0; slot < redis::kSlotCount; ++slot) {
      mismatches += map.master_of(slot)->port != owners[static_cast<size_t>(slot)];
    }
    CHECK(mismatches == 0);
    for (const auto& range : map.ranges()) {
      REQUIRE(range.replicas.size() == 1);
      CHECK(master_port_of(cluster.node_on_port(range.replicas[0].port)) == range.master.port);
      CHECK(range.master.id.size() == 40);
    }
    // CLUSTER SLOTS, the fallback for servers before 7.0, gives the same owners.
    SlotMap from_slots = SlotMap::from_slots(
        redis::ReplyView(conn.command({"CLUSTER", "SLOTS"}).get()), "127.0.0.1");
    REQUIRE(from_slots.complete());
    for (int slot = 0; slot < redis::kSlotCount; slot += 97)
      CHECK(from_slots.master_of(slot)->port == map.master_of(slot)->port);
  }

  // A key sent to a master that does not own its slot: MOVED names the owner.
  Connection conn = Connection::open(options_for(cluster.node(0)));
  SlotMap map = SlotMap::fetch(conn);
  for (const std::string& key : sample_keys()) {
    CAPTURE(key);
    int slot = redis::key_slot(key);
    for (RedisServer* m : cluster.masters()) {
      if (m->port() == map.master_of(slot)->port) continue;
      try {
        m->cmd({"GET", key});
        FAIL("a master served a key of another's slot");
      } catch (const RedisError& e) {
        auto redirect = redis::parse_redirect(e.what(), "127.0.0.1");
        REQUIRE(redirect.has_value());
        CHECK(redirect->kind == redis::Redirect::Kind::kMoved);
        CHECK(redirect->slot == slot);
        CHECK(redirect->to.port == map.master_of(slot)->port);
      }
      break;
    }
  }

  // A slot being migrated: the source answers ASK for a key it no longer has.
  const std::string key = "rlock:lock:{migrating}";
  const int slot = redis::key_slot(key);
  RedisServer& source = cluster.node_on_port(map.master_of(slot)->port);
  RedisServer* target = nullptr;
  for (RedisServer* m : cluster.masters()) {
    if (m != &source) target = m;
  }
  REQUIRE(target != nullptr);
  std::string source_id = source.cmd_str({"CLUSTER", "MYID"});
  std::string target_id = target->cmd_str({"CLUSTER", "MYID"});
  target->cmd({"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", source_id});
  source.cmd({"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", target_id});
  try {
    source.cmd({"GET", key});
    FAIL("the source of a migration served a key it does not have");
  } catch (const RedisError& e) {
    auto redirect = redis::parse_redirect(e.what(), "127.0.0.1");
    REQUIRE(redirect.has_value());
    CHECK(redirect->kind == redis::Redirect::Kind::kAsk);
    CHECK(redirect->slot == slot);
    CHECK(redirect->to.port == target->port());
  }
  source.cmd({"CLUSTER", "SETSLOT", std::to_string(slot), "STABLE"});
  target->cmd({"CLUSTER", "SETSLOT", std::to_string(slot), "STABLE"});

  // After a replica takes over (CLUSTER FAILOVER), a fresh map names it for the slot.
  auto failover_start = Clock::now();
  RedisServer& promoted = cluster.failover(source);
  MESSAGE("CLUSTER FAILOVER converged in " << ms_between(failover_start) << " ms");
  CHECK(&promoted != &source);
  Connection again = Connection::open(options_for(cluster.node(0)));
  CHECK(SlotMap::fetch(again).master_of(slot)->port == promoted.port());
}

TEST_CASE("cluster: a password on every node; the slot map through an authenticated seed") {
  ClusterSetup cluster(ClusterOptions{.password = "clusterpw"});
  MESSAGE("cluster with a password up in " << cluster.bring_up_time().count() << " ms");
  redis::Target target = redis::parse_target(cluster.url());
  REQUIRE(target.kind == redis::Deployment::kCluster);
  REQUIRE(target.seeds.size() == 6);
  target.endpoint.password = "clusterpw";
  ConnectOptions o;
  o.endpoint = target.endpoint.at(target.seeds[3].host, target.seeds[3].port);
  Connection conn = Connection::open(o);
  SlotMap map = SlotMap::fetch(conn);
  CHECK(map.complete());
  CHECK(map.masters().size() == 3);
}

TEST_CASE("sentinel: the resolver finds the master, and the new one after SENTINEL FAILOVER") {
  SentinelSetup setup(
      SentinelSetupOptions{.data_password = "datapw", .sentinel_password = "sentinelpw"});
  MESSAGE("sentinel setup (1 master, 1 replica, 3 sentinels) up in "
          << setup.bring_up_time().count() << " ms");
  redis::Target target = redis::parse_target(setup.url());
  REQUIRE(target.kind == redis::Deployment::kSentinel);
  target.endpoint.password = "datapw";
  target.sentinel_password = "sentinelpw";
  ConnectOptions timeouts;
  timeouts.connect_timeout = rlock::Millis(1000);
  timeouts.command_timeout = rlock::Millis(2000);

  redis::SentinelResolver resolver(target, timeouts);
  Connection first = resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(2000));
  CHECK(first.options().endpoint.port == setup.data(0).port());
  CHECK(redis::role_of(first) == redis::Role::kMaster);
  first.command({"SET", "before-failover", "1"});
  REQUIRE(first.command({"WAIT", "1", "5000"})->integer == 1);

  auto failover_start = Clock::now();
  RedisServer& promoted = setup.failover();
  MESSAGE("SENTINEL FAILOVER: the sentinels agree on the new master after "
          << ms_between(failover_start) << " ms");
  CHECK(&promoted == &setup.data(1));

  Connection second = resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(10000));
  CHECK(second.options().endpoint.port == setup.data(1).port());
  CHECK(redis::role_of(second) == redis::Role::kMaster);
  CHECK(redis::as_string(second.command({"GET", "before-failover"}).get()) == "1");
  // Once converted, the demoted master refuses writes (READONLY) or has closed the
  // connection; the resolver never named it after the failover, writable or not.
  auto settle_start = Clock::now();
  setup.settle();
  MESSAGE("the former master is an in-sync replica after " << ms_between(settle_start) << " ms");
  CHECK_THROWS_AS(first.command({"SET", "after-failover", "1"}), rlock::Error);

  // Back to the first data node: the resolver follows again.
  setup.failover();
  CHECK(resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(10000))
            .options()
            .endpoint.port == setup.data(0).port());
}

TEST_CASE(
    "sentinel: the master dies; the resolver finds the promoted replica, never the "
    "old master restarted empty") {
  SentinelSetup setup;
  redis::Target target = redis::parse_target(setup.url());
  ConnectOptions timeouts;
  timeouts.connect_timeout = rlock::Millis(500);
  timeouts.command_timeout = rlock::Millis(1000);
  redis::SentinelResolver resolver(target, timeouts);
  REQUIRE(resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(2000))
              .options()
              .endpoint.port == setup.data(0).port());

  auto death = Clock::now();
  setup.data(0).stop();
  Connection promoted = resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(20000));
  MESSAGE("master killed: the resolver reached the promoted replica after " << ms_between(death)
                                                                            << " ms");
  CHECK(promoted.options().endpoint.port == setup.data(1).port());
  CHECK(redis::role_of(promoted) == redis::Role::kMaster);

  // Back without data and saying "master" until a sentinel converts it: never chosen.
  setup.data(0).restart();
  CHECK(setup.data(0).cmd({"ROLE"}).at(0) == "master");
  for (int i = 0; i < 5; ++i)
    CHECK(resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(2000))
              .options()
              .endpoint.port == setup.data(1).port());
}

TEST_CASE("sentinel: sentinels asked in turn; their own password; messages name each one") {
  SentinelSetup setup(SentinelSetupOptions{.sentinel_password = "sentinelpw"});
  redis::Target target = redis::parse_target(setup.url());
  target.sentinel_password = "sentinelpw";
  ConnectOptions timeouts;
  timeouts.connect_timeout = rlock::Millis(1000);
  timeouts.command_timeout = rlock::Millis(2000);

  // The first sentinel is gone: the others answer.
  setup.sentinel(0).stop();
  redis::SentinelResolver resolver(target, timeouts);
  CHECK(resolver.connect_master(rlock::SteadyClock::now() + rlock::Millis(2000))
            .options()
            .endpoint.port == setup.data(0).port());

  struct Case {
    const char* what;
    std::string sentinel_password;
    std::string master_name;
    std::string expect;  // in the message
  } cases[] = {
      {"wrong sentinel password", "Zq9wrongpw", setup.master_name(), "WRONGPASS"},
      {"no sentinel password", "", setup.master_name(), "NOAUTH"},
      {"unknown master name", "sentinelpw", "nosuch", "does not monitor a master named 'nosuch'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    redis::Target t = target;
    t.sentinel_password = c.sentinel_password;
    t.master_name = c.master_name;
    redis::SentinelResolver r(t, timeouts);
    try {
      r.connect_master(rlock::SteadyClock::now() + rlock::Millis(500));
      FAIL("resolved");
    } catch (const rlock::Error& e) {
      std::string what = e.what();
      CAPTURE(what);
      CHECK(e.exit_code() == rlock::kExitUnavailable);
      CHECK(what.find('\n') == std::string::npos);
      CHECK(what.find(c.expect) != std::string::npos);
      CHECK(what.find("Zq9wrongpw") == std::string::npos);
      // Each sentinel is named with what it said, the stopped one too.
      for (size_t i = 0; i < setup.sentinel_count(); ++i)
        CHECK(what.find("127.0.0.1:" + std::to_string(setup.sentinel(i).port())) !=
              std::string::npos);
    }
  }
}

}  // namespace
}  // namespace rlock::test
