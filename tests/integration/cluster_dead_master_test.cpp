// A cluster master that dies (SIGKILL: connections refused) or freezes (SIGSTOP: accepted,
// never answered) under a holder and waiters: its replica takes over (cluster-node-timeout
// 1000: a second or two), and the waits, renewals and releases of the slot must follow it
// instead of staying pinned to the dead address until their --wait or stop point.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "deployments.hpp"
#include "redis/slot.hpp"

namespace rlock::test {
namespace {

enum class Fault { kKill, kStop };

RunResult on(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {"--url", url});
  return rlock_raw(args);
}

Spawned spawn_on(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {rlock_binary(), "--url", url});
  return Spawned(args);
}

long long replication_field(const RedisServer& server, const std::string& field) {
  return std::stoll(info_fields(server.cmd_str({"INFO", "replication"}))[field]);
}

size_t index_of(ClusterSetup& cluster, const RedisServer& server) {
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (&cluster.node(i) == &server) return i;
  }
  FAIL("not a node of the cluster");
  return 0;
}

// The slot's master and its replica, the replica in sync with what the master has now (so
// that the hold and the queue survive the failover).
struct Shard {
  RedisServer* master = nullptr;
  RedisServer* replica = nullptr;

  void await_replicated() const {
    long long offset = replication_field(*master, "master_repl_offset");
    REQUIRE(poll_until([&] { return replication_field(*replica, "slave_repl_offset") >= offset; },
                       10s));
  }
};

Shard shard_of(ClusterSetup& cluster, int slot) {
  Shard s{&cluster.master_of_slot(slot), nullptr};
  for (RedisServer* r : cluster.replicas()) {
    if (info_fields(r->cmd_str({"INFO", "replication"}))["master_port"] ==
        std::to_string(s.master->port()))
      s.replica = r;
  }
  REQUIRE(s.replica != nullptr);
  return s;
}

void inflict(Fault fault, RedisServer& master) {
  if (fault == Fault::kKill) {
    ::kill(master.pid(), SIGKILL);  // reaped (by pid) when the cluster goes
  } else {
    master.freeze();
  }
}

// Until the replica has taken over the slot (its own CLUSTER NODES says so).
void await_promoted(ClusterSetup& cluster, const Shard& s, int slot) {
  size_t i = index_of(cluster, *s.replica);
  REQUIRE(poll_until(
      [&] {
        try {
          return &cluster.master_of_slot(slot, i) == s.replica;
        } catch (const std::runtime_error&) {
          return false;  // no owner for a moment
        }
      },
      20s, 50ms));
}

// A holder (lock --lease 20s), a `lock -w 30s` and an `exec -w 30s` waiter queued behind
// it, then the slot's master fails. The holder's unlock reaches the promoted replica, and
// each waiter gets the lock from there long before its --wait or the lease runs out.
void holder_and_waiters(Fault fault) {
  ClusterSetup cluster;
  const std::string name = "dm", url = cluster.url();
  const int slot = redis::key_slot(lock_key(name));
  Shard s = shard_of(cluster, slot);
  REQUIRE(on(url, {"lock", name, "--owner", "h", "--lease", "20s"}).status == 0);
  Spawned locker = spawn_on(url, {"lock", name, "--owner", "w", "--lease", "20s", "-w", "30s"});
  REQUIRE(poll_until(
      [&] {
        return s.master->cmd_int({"ZCARD", lock_key(name) + ":waiters"}) == 1;
      },
      10s));
  Spawned execer = spawn_on(url, {"exec", "-w", "30s", name, "--", "true"});
  REQUIRE(poll_until(
      [&] {
        return s.master->cmd_int({"ZCARD", lock_key(name) + ":waiters"}) == 2;
      },
      10s));
  s.await_replicated();
  auto failed_at = Clock::now();
  inflict(fault, *s.master);
  // A frozen first seed costs a fresh process half its --timeout: the unlock comes once the
  // replica took over. After a kill it goes at once and rides out the failover.
  if (fault == Fault::kStop) await_promoted(cluster, s, slot);
  RunResult unlocked = on(url, {"--timeout", "10s", "unlock", name, "--owner", "h"});
  INFO("unlock: " << unlocked.status << " " << unlocked.err);
  CHECK(unlocked.status == 0);
  REQUIRE(locker.wait(deadline(20s)).has_value());
  INFO("lock -w: " << locker.err());
  CHECK(locker.wait(Clock::now()) == 0);
  CHECK(ms_between(failed_at, locker.exit_time()) < 15000);
  REQUIRE(on(url, {"--timeout", "10s", "unlock", name, "--owner", "w"}).status == 0);
  REQUIRE(execer.wait(deadline(20s)).has_value());
  INFO("exec -w: " << execer.err());
  CHECK(execer.wait(Clock::now()) == 0);
  CHECK(ms_between(failed_at, execer.exit_time()) < 15000);
  // Everything happened on the new master: nothing is left there.
  CHECK(s.replica->cmd_int({"EXISTS", lock_key(name)}) == 0);
  MESSAGE("waiters done " << ms_between(failed_at, execer.exit_time())
                          << " ms after the master failed");
  if (fault == Fault::kStop) s.master->thaw();
}

TEST_CASE("cluster dead master: SIGKILL; the unlock and both waiters follow the replica") {
  holder_and_waiters(Fault::kKill);
}

TEST_CASE("cluster dead master: SIGSTOP; the unlock and both waiters follow the replica") {
  holder_and_waiters(Fault::kStop);
}

// An exec holder (--lease 6s, --kill-after 1s: renewed every 2 s, stopped 4.7 s after the
// last renewal that was answered) whose master is killed mid-job: its renewals go to the
// promoted replica, which has the hold, so the job runs to its end and rlock exits with the
// job's status, and the release leaves the lock free there.
TEST_CASE("cluster dead master: SIGKILL under an exec holder; renewals follow the replica") {
  ClusterSetup cluster;
  TempDir dir;
  const std::string name = "dx", url = cluster.url(), started = dir / "started";
  const int slot = redis::key_slot(lock_key(name));
  Shard s = shard_of(cluster, slot);
  Spawned holder = spawn_on(url, {"exec", "--lease", "6s", "--kill-after", "1s", name, "--", "sh",
                                  "-c", "touch \"$0\"; sleep 9; exit 3", started});
  REQUIRE(poll_until([&] { return std::filesystem::exists(started); }, 10s));
  // Killed just before a renewal is due (at 4 s of lease left), while the other nodes still
  // name it as the slot's master: the renewal's first redirect goes to the dead address.
  REQUIRE(poll_until(
      [&] {
        return s.master->cmd_int({"PTTL", lock_key(name)}) <= 4300;
      },
      10s, 10ms));
  s.await_replicated();
  inflict(Fault::kKill, *s.master);
  REQUIRE(holder.wait(deadline(30s)).has_value());
  INFO("holder: " << holder.err());
  CHECK(holder.wait(Clock::now()) == 3);
  CHECK(s.replica->cmd_int({"EXISTS", lock_key(name)}) == 0);
}

}  // namespace
}  // namespace rlock::test
