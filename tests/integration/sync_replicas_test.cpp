// --sync-replicas: acquisitions and renewals acknowledged by replicas (WAIT behind the
// script), against a real master with a real replica (standalone, Sentinel, Cluster). A
// replica that stops answering (SIGSTOP) makes an acquisition fail within --sync-timeout,
// give back what it took and say so in one line; a renewal it does not acknowledge does not
// count, and an exec's job is stopped as for a lost lock.
#include <doctest/doctest.h>

#include <filesystem>

#include "deployments.hpp"
#include "redis/slot.hpp"

namespace rlock::test {
namespace {

// A master (no persistence) and one replica of it, in sync; neither follows
// RLOCK_TEST_TOPOLOGY (the pair is the topology).
struct ReplicatedPair {
  RedisServer master{RedisOptions{.test_topology = false}};
  RedisServer replica;

  ReplicatedPair()
      : replica(RedisOptions{.config = {"replicaof 127.0.0.1 " + std::to_string(master.port())},
                             .test_topology = false}) {
    bool synced = poll_until(
        [&] {
          auto f = info_fields(master.cmd_str({"INFO", "replication"}));
          return f["connected_slaves"] == "1" &&
                 f["slave0"].find("state=online") != std::string::npos;
        },
        10s);
    REQUIRE_MESSAGE(synced, master.log());
  }
};

RunResult on(const std::string& url, std::vector<std::string> args,
             std::chrono::milliseconds timeout = 30s) {
  args.insert(args.begin(), {"--url", url});
  return rlock_raw(args, {}, timeout);
}

// Thaws the replica however the test ends.
struct Frozen {
  explicit Frozen(RedisServer& s) : server(s) { server.freeze(); }
  ~Frozen() { server.thaw(); }
  RedisServer& server;
};

void require_one_line(const RunResult& r, const std::string& must_say) {
  INFO("stderr: " << r.err);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find(must_say) != std::string::npos);
}

TEST_CASE("sync-replicas: an acknowledged lock says how many replicas acknowledged it") {
  ReplicatedPair pair;
  RunResult r = on(pair.master.url(), {"--sync-replicas", "1", "lock", "acked", "--owner", "o"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  json j = parse_json(r.out);
  CHECK(j["acquired"] == true);
  CHECK(j["replicas_acked"] == 1);
  // Acknowledged means the replica has it now, not later.
  CHECK(pair.replica.cmd_int({"EXISTS", lock_key("acked")}) == 1);

  // Without the flag nothing changes: no field, no WAIT.
  r = on(pair.master.url(), {"lock", "plain", "--owner", "o"});
  REQUIRE(r.status == 0);
  CHECK_FALSE(parse_json(r.out).contains("replicas_acked"));

  // The config file's key and the environment variable are the flag's other sources.
  r = rlock_raw({"--url", pair.master.url(), "sem", "acquire", "s", "--permits", "2"},
                {{"RLOCK_SYNC_REPLICAS", "1"}});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(parse_json(r.out)["replicas_acked"] == 1);
  r = on(pair.master.url(), {"--sync-replicas", "1", "latch", "set", "c", "2"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(parse_json(r.out)["replicas_acked"] == 1);
  // Read-only commands do not wait for anything.
  r = on(pair.master.url(), {"--sync-replicas", "1", "latch", "status", "c"});
  REQUIRE(r.status == 0);
  CHECK_FALSE(parse_json(r.out).contains("replicas_acked"));
}

TEST_CASE("sync-replicas: a stopped replica fails each acquisition within --sync-timeout") {
  ReplicatedPair pair;
  REQUIRE(on(pair.master.url(), {"latch", "set", "c", "3"}).status == 0);
  REQUIRE(on(pair.master.url(), {"delay-push", "q", "--delay", "0", "item"}).status == 0);
  TempDir dir;
  std::string ran = dir / "ran";
  Frozen frozen(pair.replica);
  const std::vector<std::string> sync = {"--sync-replicas", "1", "--sync-timeout", "500ms"};
  auto with_sync = [&](std::vector<std::string> args) {
    args.insert(args.begin(), sync.begin(), sync.end());
    return on(pair.master.url(), args);
  };

  SUBCASE("lock: the hold is given back") {
    RunResult r = with_sync({"lock", "deploy", "--owner", "o"});
    CHECK(r.status == 69);
    CHECK(r.elapsed < 5s);
    CHECK(r.out.empty());
    require_one_line(r, "lock 'deploy': 0 of 1 connected replicas");
    CHECK(r.err.find("given back") != std::string::npos);
    CHECK(pair.master.cmd_int({"EXISTS", lock_key("deploy")}) == 0);
  }
  SUBCASE("lock: a re-entry's level is given back, the earlier hold stays") {
    pair.replica.thaw();  // the first hold is acknowledged, the re-entry is not
    REQUIRE(with_sync({"lock", "re", "--owner", "o"}).status == 0);
    pair.replica.freeze();
    RunResult r = with_sync({"lock", "re", "--owner", "o"});
    CHECK(r.status == 69);
    require_one_line(r, "lock 're'");
    CHECK(pair.master.cmd_str({"HGET", lock_key("re"), "o"}) == "1");
  }
  SUBCASE("exec: the job never starts") {
    RunResult r = with_sync({"exec", "job", "--", "touch", ran});
    CHECK(r.status == 69);
    CHECK(r.elapsed < 5s);
    require_one_line(r, "lock 'job': 0 of 1 connected replicas");
    CHECK_FALSE(std::filesystem::exists(ran));
    CHECK(pair.master.cmd_int({"EXISTS", lock_key("job")}) == 0);
  }
  SUBCASE("sem acquire: the permits are given back") {
    RunResult r = with_sync({"sem", "acquire", "pool", "--permits", "2", "--owner", "o"});
    CHECK(r.status == 69);
    CHECK(r.elapsed < 5s);
    require_one_line(r, "semaphore 'pool': 0 of 1 connected replicas");
    CHECK(pair.master.cmd_int({"ZCARD", "rlock:sem:{pool}"}) == 0);
  }
  SUBCASE("latch count-down: reported, and the change stands") {
    RunResult r = with_sync({"latch", "count-down", "c"});
    CHECK(r.status == 69);
    CHECK(r.elapsed < 5s);
    require_one_line(r, "latch 'c': 0 of 1 connected replicas");
    CHECK(r.err.find("stands") != std::string::npos);
    CHECK(pair.master.cmd_str({"GET", "rlock:latch:{c}"}) == "2");
  }
  SUBCASE("delay-pop: the item goes back, its delivery not counted") {
    RunResult r = with_sync({"delay-pop", "q"});
    CHECK(r.status == 69);
    CHECK(r.out.empty());
    require_one_line(r, "queue 'q': 0 of 1 connected replicas");
    CHECK(pair.master.cmd_int({"ZCARD", "rlock:queue:{q}:sched"}) == 1);
  }
}

TEST_CASE("sync-replicas: more replicas asked for than connected fails at once, nothing taken") {
  ReplicatedPair pair;
  RunResult r = on(pair.master.url(), {"--sync-replicas", "2", "--sync-timeout", "20s", "lock",
                                       "few", "--owner", "o"});
  CHECK(r.status == 69);
  CHECK(r.elapsed < 10s);
  require_one_line(r, "1 connected replicas, fewer than --sync-replicas 2");
  CHECK(pair.master.cmd_int({"EXISTS", lock_key("few")}) == 0);
}

// The master extended the hold at each renewal that the replica did not acknowledge: once
// the job is stopped, the hold is given back at once, not left to keep others out for up
// to a lease.
TEST_CASE("sync-replicas: a renewal the replica does not acknowledge stops exec's job (76)") {
  struct Case {
    std::vector<std::string> exec;
    std::vector<std::string> held;  // what the master has while the hold is there
  };
  const Case cases[] = {
      {{"exec", "--lease", "3s", "--kill-after", "500ms", "renewed"},
       {"EXISTS", lock_key("renewed")}},
      {{"sem", "exec", "--permits", "2", "--lease", "3s", "--kill-after", "500ms", "renewed"},
       {"ZCARD", "rlock:sem:{renewed}"}},
      {{"exec", "--lease", "3s", "--kill-after", "500ms", "renewed", "other"},
       {"EXISTS", lock_key("renewed"), lock_key("other")}},
  };
  for (const auto& c : cases) {
    CAPTURE(json(c.exec).dump());
    ReplicatedPair pair;
    // --sync-timeout 1s: a busy machine (CI runs two suites at once) can keep a live replica
    // from acknowledging the acquisition within 300 ms, and the job then never starts (69).
    std::vector<std::string> args = {"--sync-replicas", "1", "--sync-timeout", "1s"};
    args.insert(args.end(), c.exec.begin(), c.exec.end());
    args.insert(args.end(), {"--", "sh", "-c", "echo started; exec sleep 60"});
    Spawned job(rlock_argv(pair.master, args));
    // The job runs once the acquisition was acknowledged.
    auto first = job.read_line(deadline(10s));
    INFO("stderr: " << job.err());
    REQUIRE(first == std::optional<std::string>("started"));
    auto stopped_at = Clock::now();
    Frozen frozen(pair.replica);
    auto status = job.wait(deadline(20s));
    INFO("stderr: " << job.err());
    REQUIRE(status.has_value());
    CHECK(*status == 76);
    // Stopped before the lease taken or last renewed before the replica stopped ran out.
    CHECK(ms_between(stopped_at, job.exit_time()) < 3000);
    // The watchdog (its renewal was short: "0 of 1 connected replicas") or the guardian (no
    // renewal reached it before the stop point), whichever comes first.
    CHECK(job.err().find("lock lost") != std::string::npos);
    CHECK(pair.master.cmd_int(c.held) == 0);
  }
}

// After a failover the new master has no replica until the sentinels convert the old one
// (about 8 s): a waiter's attempts meanwhile take nothing (the lock is held), so they are not
// judged by the replicas, and the wait goes on; it takes the lock once a replica is back.
TEST_CASE("sync-replicas: a waiter keeps waiting while the new master has too few replicas") {
  SentinelSetup setup;
  const std::vector<std::string> sync = {"--sync-replicas", "1", "--sync-timeout", "300ms"};
  auto with_sync = [&](std::vector<std::string> args) {
    args.insert(args.begin(), sync.begin(), sync.end());
    args.insert(args.begin(), {rlock_binary(), "--url", setup.url()});
    return args;
  };
  RedisServer& old_master = setup.current_master();
  RunResult held = rlock_raw(
      {"--url", setup.url(), "--sync-replicas", "1", "lock", "L", "--owner", "h", "--lease", "60s"},
      {}, 30s);
  REQUIRE_MESSAGE(held.status == 0, held.err);
  Spawned waiter(with_sync({"lock", "L", "--owner", "w", "--wait", "60s"}));
  const std::string queue = lock_key("L") + ":waiters";
  REQUIRE(poll_until([&] { return old_master.cmd_int({"ZCARD", queue}) == 1; }, 10s));
  RedisServer& new_master = setup.failover();
  REQUIRE(new_master.cmd_int({"ZCARD", queue}) == 1);  // replicated by the acknowledged attempt
  // The waiter follows the failover and its attempt reaches the new master (its WAIT
  // blocks there for want of replicas), or it has ended.
  bool attempted = poll_until(
      [&] {
        return !waiter.running() ||
               new_master.cmd_str({"CLIENT", "LIST", "TYPE", "normal"}).find("cmd=wait") !=
                   std::string::npos;
      },
      10s, 20ms);
  INFO("waiter: " << waiter.err());
  REQUIRE(attempted);
  REQUIRE(waiter.running());
  REQUIRE(new_master.cmd({"ROLE"}).size() < 5);  // still no replica (5: one)
  setup.settle();
  REQUIRE(rlock_raw({"--url", setup.url(), "unlock", "L", "--owner", "h"}, {}, 30s).status == 0);
  CHECK(waiter.wait(deadline(20s)).value_or(kStillRunning) == 0);
  json j = parse_json(waiter.out());
  CHECK(j["acquired"] == true);
  CHECK(j["replicas_acked"] == 1);
}

TEST_CASE("sync-replicas: bad values are usage errors (64)") {
  RedisServer server;
  const std::vector<std::vector<std::string>> cases = {
      {"--sync-replicas", "-1"},   {"--sync-replicas", "abc"},
      {"--sync-replicas", "1.5"},  {"--sync-replicas", "99999999999999999999"},
      {"--sync-replicas", "1001"}, {"--sync-timeout", "0"},
      {"--sync-timeout", "soon"},  {"--sync-replicas", ""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c;
    args.insert(args.end(), {"lock", "bad", "--owner", "o"});
    RunResult r = rlock(server, args);
    INFO(c[0] << " " << c[1] << ": " << r.err);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  RunResult r = rlock(server, {"lock", "bad", "--owner", "o"}, {{"RLOCK_SYNC_REPLICAS", "x"}});
  CHECK(r.status == 64);
  CHECK(r.err.find("RLOCK_SYNC_REPLICAS") != std::string::npos);
  CHECK(server.cmd_int({"EXISTS", lock_key("bad")}) == 0);
}

TEST_CASE("sync-replicas: Sentinel and Cluster acknowledge on the master that took the write") {
  SUBCASE("sentinel") {
    SentinelSetup setup;
    RunResult r = on(setup.url(), {"--sync-replicas", "1", "lock", "s", "--owner", "o"});
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(parse_json(r.out)["replicas_acked"] == 1);
    Frozen frozen(setup.data(1));
    r = on(setup.url(),
           {"--sync-replicas", "1", "--sync-timeout", "500ms", "lock", "t", "--owner", "o"});
    CHECK(r.status == 69);
    require_one_line(r, "lock 't': 0 of 1 connected replicas");
    CHECK(setup.data(0).cmd_int({"EXISTS", lock_key("t")}) == 0);
  }
  SUBCASE("cluster") {
    ClusterSetup cluster;
    // Every master with its replica online (a loaded machine may have failed one over
    // since, and the new replica is still syncing).
    for (RedisServer* m : cluster.masters()) {
      bool online = poll_until([&] { return m->cmd({"ROLE"}).size() >= 5; }, 20s);
      REQUIRE_MESSAGE(online, "master on port " << m->port() << " has no replica online");
    }
    // Every slot's master has one replica: each of these names lands on some master.
    for (std::string name : {"a", "b", "c", "d"}) {
      RunResult r = on(cluster.url(), {"--sync-replicas", "1", "lock", name, "--owner", "o"});
      REQUIRE_MESSAGE(r.status == 0, r.err);
      CHECK(parse_json(r.out)["replicas_acked"] == 1);
    }
    // A seed that is a replica (it answers MOVED) is no master with too few replicas.
    RedisServer* seed = cluster.replicas().front();
    std::string via_replica = "redis-cluster://127.0.0.1:" + std::to_string(seed->port());
    RunResult r = on(via_replica, {"--sync-replicas", "1", "lock", "f", "--owner", "o"});
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(parse_json(r.out)["replicas_acked"] == 1);
    // The replica of the master that serves "g" stopped: the WAIT behind the redirected
    // script is short, and the hold goes.
    RedisServer& master = cluster.master_of_slot(redis::key_slot(lock_key("g")));
    RedisServer* replica = nullptr;
    for (RedisServer* n : cluster.replicas()) {
      auto role = n->cmd({"ROLE"});
      if (role.size() > 2 && role[2] == std::to_string(master.port())) replica = n;
    }
    REQUIRE(replica != nullptr);
    {
      Frozen frozen(*replica);
      r = on(cluster.url(),
             {"--sync-replicas", "1", "--sync-timeout", "500ms", "lock", "g", "--owner", "o"});
      CHECK(r.status == 69);
      require_one_line(r, "lock 'g': 0 of 1 connected replicas");
      CHECK(master.cmd_int({"EXISTS", lock_key("g")}) == 0);
    }
    // --sync-replicas 2: every master has only one.
    r = on(cluster.url(), {"--sync-replicas", "2", "lock", "e", "--owner", "o"});
    CHECK(r.status == 69);
    require_one_line(r, "fewer than --sync-replicas 2");
  }
}

}  // namespace
}  // namespace rlock::test
