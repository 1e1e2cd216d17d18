// Every primitive through `redis-cluster://` and `redis-sentinel://` URLs, against the
// harness's real deployments: names spread over every slot, waiters woken through sharded
// pub/sub, inspect over every master, a Sentinel failover under an exec and its waiter.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "deployments.hpp"
#include "redis/slot.hpp"

namespace rlock::test {
namespace {

RunResult on(const std::string& url, std::vector<std::string> args,
             std::chrono::milliseconds timeout = 30s) {
  args.insert(args.begin(), {"--url", url});
  return rlock_raw(args, {}, timeout);
}

Spawned spawn_on(const std::string& url, std::vector<std::string> args) {
  std::vector<std::string> argv = {rlock_binary(), "--url", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

// What every primitive does for one name, each step's outcome as a line: a run on any
// topology must give exactly these (exit 0, nothing on stderr).
void every_primitive(const std::string& url, const std::string& n,
                     std::vector<std::string>& failures) {
  std::vector<std::vector<std::string>> steps = {
      {"lock", "l-" + n, "--owner", "o", "--lease", "30s"},
      {"unlock", "l-" + n, "--owner", "o"},
      {"exec", "e-" + n, "--", "true"},
      {"lock", "-s", "l-" + n, "--owner", "r1", "--lease", "30s"},
      {"exec", "-s", "l-" + n, "--", "true"},
      {"unlock", "l-" + n, "--force"},
      {"sem", "exec", "--permits", "2", "s-" + n, "--", "true"},
      {"latch", "set", "c-" + n, "1"},
      {"latch", "count-down", "c-" + n, "--id", "a"},
      {"latch", "await", "c-" + n, "--wait", "1s"},
      {"limit", "r-" + n, "--rate", "10", "--per", "1s"},
      {"delay-push", "q-" + n, "--delay", "0", "x"},
      {"delay-pop", "q-" + n},
  };
  for (const auto& step : steps) {
    RunResult r = on(url, step);
    if (r.status != 0 || !r.err.empty()) {
      std::string line = step[0] + " " + step[1] + " " + (step.size() > 2 ? step[2] : "") +
                         ": status " + std::to_string(r.status) + ": " + r.err;
      failures.push_back(line);
    }
  }
}

TEST_CASE("cluster: 100 names over every master, every primitive: no MOVED, no CROSSSLOT") {
  ClusterSetup cluster;
  auto start = Clock::now();
  std::set<int> owners;
  std::vector<std::string> failures;
  for (int i = 0; i < 100; ++i) {
    std::string n = std::to_string(i);
    owners.insert(cluster.slot_owner_ports()[redis::key_slot(lock_key("l-" + n))]);
    every_primitive(cluster.url(), n, failures);
  }
  MESSAGE("1300 runs on the cluster in " << ms_between(start) << " ms");
  CHECK(owners.size() == 3);
  CHECK(failures == std::vector<std::string>{});
}

TEST_CASE("sentinel: every primitive through redis-sentinel://") {
  SentinelSetup sentinel;
  auto start = Clock::now();
  std::vector<std::string> failures;
  for (int i = 0; i < 10; ++i) every_primitive(sentinel.url(), std::to_string(i), failures);
  MESSAGE("130 runs through the sentinels in " << ms_between(start) << " ms");
  CHECK(failures == std::vector<std::string>{});
}

TEST_CASE("cluster: a plain redis:// URL of one node is used as the seed, with a notice under -v") {
  ClusterSetup cluster;
  std::string url = cluster.node(0).url();
  std::vector<std::string> failures;
  for (int i = 0; i < 10; ++i) every_primitive(url, "p" + std::to_string(i), failures);
  CHECK(failures == std::vector<std::string>{});
  // A name whose slot node 0 does not serve.
  std::string name;
  for (int i = 0; name.empty(); ++i) {
    std::string n = "v" + std::to_string(i);
    if (cluster.slot_owner_ports()[redis::key_slot(lock_key(n))] != cluster.node(0).port())
      name = n;
  }
  RunResult r = on(url, {"-v", "exec", name, "--", "true"});
  CHECK(r.status == 0);
  CHECK(r.err.find("is a node of a Redis Cluster (it answered MOVED): using it as the "
                   "cluster's seed") != std::string::npos);
}

TEST_CASE("cluster: a frozen first seed hands over to the next one") {
  // A frozen node accepts connections and answers nothing: the retry after the first
  // try's patience (half of --timeout) goes to the next seed, not to the same node again.
  ClusterSetup cluster({.masters = 3, .replicas_per_master = 0});
  for (size_t i = 0; i < cluster.size(); ++i)
    cluster.node(i).cmd({"CONFIG", "SET", "cluster-require-full-coverage", "no"});
  RedisServer& first = cluster.node(0);
  auto name_where = [&](bool on_first) {
    for (int i = 0;; ++i) {
      std::string n = "s" + std::to_string(i);
      if ((cluster.slot_owner_ports()[redis::key_slot(lock_key(n))] == first.port()) == on_first)
        return n;
    }
  };
  const std::string elsewhere = name_where(false), on_first = name_where(true);
  first.freeze();
  const auto start = std::chrono::steady_clock::now();
  RunResult r = on(cluster.url(), {"--timeout", "4s", "lock", elsewhere, "--owner", "o"});
  const auto took = std::chrono::steady_clock::now() - start;
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(took < 4s);
  // A name the frozen node serves stays unavailable: its owner does not answer.
  r = on(cluster.url(), {"--timeout", "2s", "lock", on_first, "--owner", "o"});
  CHECK(r.status == 69);
  first.thaw();
}

TEST_CASE("cluster: exec of three names, one master frozen: 76 naming it, the others given back") {
  // The frozen master's lock expires with its lease; the two on masters that answer are
  // released once the job is dead, not left blocking the next job for a whole lease.
  ClusterSetup cluster({.masters = 3, .replicas_per_master = 0});
  for (size_t i = 0; i < cluster.size(); ++i)
    cluster.node(i).cmd({"CONFIG", "SET", "cluster-require-full-coverage", "no"});
  std::vector<std::string> names;  // one on each master, in sorted (taking) order
  std::set<int> used;
  for (int i = 0; names.size() < 3; ++i) {
    std::string n = "m" + std::to_string(i);
    if (used.insert(cluster.slot_owner_ports()[redis::key_slot(lock_key(n))]).second)
      names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  std::map<std::string, RedisServer*> owners;  // asked before a node is frozen
  for (const auto& n : names)
    owners[n] = &cluster.node_on_port(cluster.slot_owner_ports()[redis::key_slot(lock_key(n))]);
  auto owner = [&](const std::string& n) -> RedisServer& { return *owners.at(n); };
  auto job = spawn_on(cluster.url(), {"exec", "--lease", "6s", names[0], names[1], names[2], "--",
                                      "sh", "-c", "echo $$; exec sleep 60"});
  auto line = job.read_line(deadline(10s));
  REQUIRE(line.has_value());
  PidGuard child(static_cast<pid_t>(std::stol(*line)));
  owner(names[1]).freeze();
  auto status = job.wait(deadline(20s));
  INFO("stderr: " << job.err());
  CHECK(status.value_or(kStillRunning) == 76);
  CHECK(child.wait_gone(2s));
  // (The line is the watchdog's or the guardian's, whichever came first at the stop point:
  // either names the lock and its server's failure, not rlock's slowness.)
  CHECK(job.err().find("did not answer") != std::string::npos);
  CHECK(job.err().find("too slow") == std::string::npos);
  CHECK(job.err().find("lock '" + names[1] + "'") != std::string::npos);
  CHECK(owner(names[0]).cmd_int({"EXISTS", lock_key(names[0])}) == 0);
  CHECK(owner(names[2]).cmd_int({"EXISTS", lock_key(names[2])}) == 0);
  owner(names[1]).thaw();
}

TEST_CASE("cluster: inspect shows each lock of every master once") {
  ClusterSetup cluster;
  std::set<std::string> expected;
  for (int i = 0; i < 30; ++i) {
    std::string n = "i-" + std::to_string(i);
    REQUIRE(on(cluster.url(), {"lock", n, "--owner", "o", "--lease", "1m"}).status == 0);
    expected.insert(n);
  }
  RunResult r = on(cluster.url(), {"inspect"});
  REQUIRE(r.status == 0);
  std::multiset<std::string> seen;
  for (const json& o : parse_json(r.out)) seen.insert(o.value("name", ""));
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == expected);
  CHECK(seen.size() == expected.size());
  // The same through a plain URL of one node.
  RunResult plain = on(cluster.node(1).url(), {"inspect"});
  CHECK(plain.status == 0);
  CHECK(parse_json(plain.out).size() == expected.size());
}

// The waiter is woken by the release (sharded pub/sub on the slot's master), not by the
// holder's lease running out.
TEST_CASE("cluster: a waiter is woken through sharded pub/sub when the holder ends") {
  ClusterSetup cluster;
  for (const std::string name : {"w-a", "w-b", "w-c"}) {
    RedisServer& master = cluster.master_of_slot(redis::key_slot(lock_key(name)));
    Spawned holder = spawn_on(cluster.url(), {"exec", name, "--", "sleep", "1"});
    REQUIRE(poll_until([&] { return master.cmd({"EXISTS", lock_key(name)})[0] == "1"; }, 10s));
    Spawned waiter = spawn_on(cluster.url(), {"exec", "--wait", "30s", name, "--", "true"});
    REQUIRE(poll_until([&] { return subscribers(master, lock_channel(name)) > 0; }, 10s));
    REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 30s));
    CHECK(holder.wait(Clock::now()) == 0);
    CHECK(waiter.wait(Clock::now()) == 0);
    long long handoff = ms_between(holder.exit_time(), waiter.exit_time());
    MESSAGE(name << ": the waiter ended " << handoff << " ms after the holder");
    CHECK(handoff < 1000);
  }
}

// Moves `slot` from `from` to `to` the way redis-cli --cluster reshard does, in two halves:
// the keys first (the slot then MIGRATING on `from`, IMPORTING on `to`: requests for
// missing keys are answered ASK), then the slot's owner on every master (MOVED).
void migrate_keys(RedisServer& from, RedisServer& to, int slot) {
  std::string s = std::to_string(slot);
  to.cmd({"CLUSTER", "SETSLOT", s, "IMPORTING", from.cmd_str({"CLUSTER", "MYID"})});
  from.cmd({"CLUSTER", "SETSLOT", s, "MIGRATING", to.cmd_str({"CLUSTER", "MYID"})});
  auto keys = from.cmd({"CLUSTER", "GETKEYSINSLOT", s, "1000"});
  REQUIRE(!keys.empty());
  std::vector<std::string> argv = {"MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0",
                                   "5000",    "KEYS"};
  argv.insert(argv.end(), keys.begin(), keys.end());
  from.cmd(argv);
}

// The importing node first, as redis-cli does: a client that the old owner redirects
// finds the new one ready.
void assign_slot(ClusterSetup& cluster, RedisServer& to, int slot) {
  std::vector<std::string> argv = {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE",
                                   to.cmd_str({"CLUSTER", "MYID"})};
  to.cmd(argv);
  for (RedisServer* m : cluster.masters()) {
    if (m->port() != to.port()) m->cmd(argv);
  }
}

TEST_CASE("cluster: the slot of a held lock migrates mid-hold: renewal, ASK, hand-off, release") {
  ClusterSetup cluster;
  const std::string name = "moving";
  int slot = redis::key_slot(lock_key(name));
  RedisServer& from = cluster.master_of_slot(slot);
  RedisServer* to = nullptr;
  for (RedisServer* m : cluster.masters()) {
    if (m->port() != from.port()) to = m;
  }
  REQUIRE(to != nullptr);
  Spawned holder = spawn_on(cluster.url(), {"exec", "--lease", "3s", name, "--", "sleep", "5"});
  REQUIRE(poll_until([&] { return from.cmd({"EXISTS", lock_key(name)})[0] == "1"; }, 10s));
  Spawned waiter = spawn_on(cluster.url(), {"exec", "--wait", "30s", name, "--", "true"});
  REQUIRE(poll_until([&] { return subscribers(from, lock_channel(name)) > 0; }, 10s));

  migrate_keys(from, *to, slot);
  // The keys are on `to`, the slot still `from`'s: a request is answered ASK, and `to`
  // answers TRYAGAIN to a script whose keys are not all there yet, until the slot is
  // assigned. The request keeps trying within --timeout and then finds the lock busy.
  Spawned busy = spawn_on(cluster.url(), {"lock", name, "--owner", "other"});
  std::this_thread::sleep_for(300ms);  // the migration's duration, not a synchronisation
  CHECK(busy.running());
  assign_slot(cluster, *to, slot);
  REQUIRE(busy.wait(Clock::now() + 10s).has_value());
  CHECK(busy.wait(Clock::now()) == 75);
  CHECK(busy.err() == "");
  cluster.await_converged();

  REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 30s));
  INFO("holder: " << holder.err() << " waiter: " << waiter.err());
  CHECK(holder.wait(Clock::now()) == 0);  // renewed on the new owner all along
  CHECK(waiter.wait(Clock::now()) == 0);
  long long handoff = ms_between(holder.exit_time(), waiter.exit_time());
  MESSAGE("after the migration the waiter ended " << handoff << " ms after the holder");
  CHECK(handoff < 1500);
  CHECK(to->cmd({"EXISTS", lock_key(name)})[0] == "0");  // released there
  CHECK(holder.err().find("MOVED") == std::string::npos);
  CHECK(waiter.err().find("CROSSSLOT") == std::string::npos);
}

TEST_CASE("sentinel: SENTINEL FAILOVER while an exec holds and another waits") {
  SentinelSetup sentinel;
  RedisServer& master = sentinel.current_master();
  Spawned holder = spawn_on(sentinel.url(), {"exec", "f", "--", "sleep", "3"});
  REQUIRE(poll_until([&] { return master.cmd({"EXISTS", lock_key("f")})[0] == "1"; }, 10s));
  Spawned waiter = spawn_on(sentinel.url(), {"exec", "--wait", "60s", "f", "--", "true"});
  REQUIRE(poll_until([&] { return subscribers(master, lock_channel("f")) > 0; }, 10s));
  auto start = Clock::now();
  sentinel.failover();
  MESSAGE("failover done in " << ms_between(start) << " ms");
  REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 60s));
  MESSAGE("holder " << *holder.wait(Clock::now()) << " err: " << holder.err());
  MESSAGE("waiter " << *waiter.wait(Clock::now()) << " err: " << waiter.err());
  // The holder either kept its lock (0) or lost it and was stopped (76); the waiter
  // reconnected to the new master and ran once the lock was free.
  CHECK((holder.wait(Clock::now()) == 0 || holder.wait(Clock::now()) == 76));
  CHECK(waiter.wait(Clock::now()) == 0);
}

}  // namespace
}  // namespace rlock::test
