// Failovers under load (issue 14): SENTINEL FAILOVER and CLUSTER FAILOVER while an exec
// holds a lock and others wait, round after round; a hold the new master never got (written
// to the old master, not yet replicated) stopped as a lost lock before anyone else's job
// starts; fencing tokens that never go backwards although the new master keeps an older
// token; a delay-pop -- CMD consumer that loses no item across failovers.
//
// Every job appends "start FENCE NS WHO" and "end FENCE NS WHO" (NS: the host's realtime
// clock in ns) to one log; a job stopped by rlock writes its end from a TERM trap. "Never
// both running" is: sorted by start, no job starts before the previous one ended.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "deployments.hpp"
#include "redis/slot.hpp"

namespace rlock::test {
namespace {

Spawned spawn_on(const std::string& url, std::vector<std::string> args) {
  std::vector<std::string> argv = {rlock_binary(), "--url", url};
  if (std::getenv("RLOCK_FAILOVER_VERBOSE")) argv.push_back("-v");
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

RunResult on(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {"--url", url});
  return rlock_raw(args);
}

// Rounds of a suite: RLOCK_FAILOVER_ROUNDS, else `rounds`.
int rounds_or(int rounds) {
  const char* v = std::getenv("RLOCK_FAILOVER_ROUNDS");
  return v && *v ? std::atoi(v) : rounds;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `exec` args of a job named `who` that stamps its start and end into `log` around `body`
// (a shell command); TERM ends it with an end stamp.
std::vector<std::string> stamped(std::vector<std::string> exec_args, const std::string& log,
                                 const std::string& who, const std::string& body) {
  const std::string stamp = "echo \"$1 $RLOCK_FENCE $(date +%s%N) $2\" >> \"$0\"";
  std::string script = "trap 'set -- end \"$2\"; " + stamp + "; exit 143' TERM; set -- start \"" +
                       who + "\"; " + stamp + "; " + body + "; set -- end \"" + who + "\"; " +
                       stamp;
  // $0 is the log, $2 the job's name (set again before each stamp).
  exec_args.insert(exec_args.end(), {"--", "sh", "-c", script, log, "x", who});
  return exec_args;
}

struct Job {
  std::string who;
  long long fence = 0;
  long long start_ns = 0;
  long long end_ns = 0;  // 0: no end stamp (yet)
};

// The jobs of `log` in start order.
std::vector<Job> jobs_of(const std::string& log) {
  std::map<long long, Job> by_fence;
  if (!std::filesystem::exists(log)) return {};
  std::istringstream in(read_file(log));
  std::string line;
  while (std::getline(in, line)) {
    // A stamp whose `date` a second TERM to the job's group cut short has no time; the
    // trap then stamps again.
    std::istringstream fields(line);
    std::string what, who;
    long long fence = 0, ns = 0;
    if (!(fields >> what >> fence >> ns >> who)) continue;
    Job& j = by_fence[fence];
    j.who = who;
    j.fence = fence;
    long long& at = what == "start" ? j.start_ns : j.end_ns;
    at = std::max(at, ns);
  }
  std::vector<Job> out;
  for (auto& [f, j] : by_fence) out.push_back(j);
  std::sort(out.begin(), out.end(),
            [](const Job& a, const Job& b) { return a.start_ns < b.start_ns; });
  return out;
}

const Job* job_named(const std::vector<Job>& jobs, const std::string& who) {
  for (const Job& j : jobs) {
    if (j.who == who) return &j;
  }
  return nullptr;
}

bool started(const std::string& log, const std::string& who) {
  return job_named(jobs_of(log), who) != nullptr;
}

// Every job ended, none started before the one before it ended, and the fences rise in
// start order: what "never both running" and "fences never go backwards" mean.
void check_serial(const std::string& log) {
  std::vector<Job> jobs = jobs_of(log);
  std::string bad;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    if (j.end_ns == 0) bad += j.who + " has no end; ";
    if (i == 0) continue;
    const Job& prev = jobs[i - 1];
    if (prev.end_ns > j.start_ns)
      bad += j.who + " started " + std::to_string((prev.end_ns - j.start_ns) / 1000000) +
             " ms before " + prev.who + " ended; ";
    if (j.fence <= prev.fence) bad += j.who + "'s fence is not above " + prev.who + "'s; ";
  }
  INFO("log:\n" << read_file(log));
  CHECK(bad == "");
}

long long max_fence(const std::string& log) {
  long long m = 0;
  for (const Job& j : jobs_of(log)) m = std::max(m, j.fence);
  return m;
}

long long fence_on(const RedisServer& server, const std::string& name) {
  std::string v = server.cmd_str({"GET", fence_key(name)});
  return v.empty() ? 0 : std::stoll(v);
}

// Server time in microseconds.
long long server_us(const RedisServer& server) {
  auto t = server.cmd({"TIME"});
  return std::stoll(t.at(0)) * 1000000 + std::stoll(t.at(1));
}

void touch(const std::string& path) { write_file(path, ""); }

// Waiters in the queue of lock `name` on `server`.
long long queued(const RedisServer& server, const std::string& name) {
  return server.cmd_int({"ZCARD", lock_key(name) + ":waiters"});
}

// Why a round's processes ended as they did, for failure messages.
std::string report(Spawned& p, const std::string& who) {
  return who + ": " + std::to_string(p.wait(Clock::now()).value_or(kStillRunning)) + " " + p.err();
}

// After a failover that lost the holder's hold: the holder stopped its job and exited 76,
// and the waiter's job, with a newer fence, ran only after it.
void check_lost_hold(Spawned& holder, Spawned& waiter, const std::string& log,
                     long long fence_before) {
  REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 30s));
  INFO(report(holder, "holder") << "\n" << report(waiter, "waiter"));
  INFO("log:\n" << read_file(log));
  CHECK(holder.wait(Clock::now()) == 76);
  CHECK(waiter.wait(Clock::now()) == 0);
  auto jobs = jobs_of(log);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].who == "h");
  CHECK(jobs[1].fence > fence_before);
  check_serial(log);
}

// SENTINEL FAILOVER to `next` without SentinelSetup::failover's settle() first (which would
// attach a detached replica again); returns once the sentinels all name `next` and its ROLE
// says master.
void failover_to(SentinelSetup& sentinel, RedisServer& next) {
  REQUIRE(poll_until(
      [&] {
        try {
          sentinel.sentinel(0).cmd({"SENTINEL", "FAILOVER", sentinel.master_name()});
          return true;
        } catch (const RedisError& e) {
          return std::string(e.what()).find("INPROG") != std::string::npos;
        }
      },
      20s, 50ms));
  REQUIRE(poll_until(
      [&] {
        try {
          return &sentinel.current_master(0ms) == &next;
        } catch (const std::runtime_error&) {
          return false;
        }
      },
      20s, 20ms));
}

// --- Sentinel ----------------------------------------------------------------------------

// One round: a holder whose job runs until `go`, two waiters queued behind it, SENTINEL
// FAILOVER, then `go`. The holder keeps its lock on the new master (0) or is stopped as
// having lost it (76); a waiter's job starts within 2 s of the failover's completion; the
// new master knows every fence handed out (nothing was taken on the demoted master).
TEST_CASE("failover: sentinel, 20 rounds of SENTINEL FAILOVER under a holder and two waiters") {
  SentinelSetup sentinel;
  TempDir dir;
  const std::string log = dir / "log", name = "sf";
  const int rounds = rounds_or(20);
  auto suite_start = Clock::now();
  long long worst_wait_ms = 0;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    std::string r = std::to_string(round), go = dir / ("go" + r);
    RedisServer& master = sentinel.current_master();
    Spawned holder = spawn_on(
        sentinel.url(), stamped({"exec", "--lease", "3s", "--wait", "30s", name}, log, "h" + r,
                                "while [ ! -e '" + go + "' ]; do sleep 0.05; done"));
    REQUIRE(poll_until([&] { return started(log, "h" + r); }, 10s));
    Spawned w1 = spawn_on(sentinel.url(), stamped({"exec", "--lease", "3s", "--wait", "30s", name},
                                                  log, "a" + r, "sleep 0.1"));
    Spawned w2 = spawn_on(sentinel.url(), stamped({"exec", "--lease", "3s", "--wait", "30s", name},
                                                  log, "b" + r, "sleep 0.1"));
    REQUIRE(poll_until([&] { return queued(master, name) == 2; }, 10s));
    sentinel.failover();
    long long done_ns = now_ns();
    touch(go);
    REQUIRE(Spawned::wait_all({&holder, &w1, &w2}, Clock::now() + 30s));
    INFO(report(holder, "holder") << "\n" << report(w1, "w1") << "\n" << report(w2, "w2"));
    int h = *holder.wait(Clock::now());
    CHECK((h == 0 || h == 76));
    CHECK(w1.wait(Clock::now()) == 0);
    CHECK(w2.wait(Clock::now()) == 0);
    auto jobs = jobs_of(log);
    const Job *a = job_named(jobs, "a" + r), *b = job_named(jobs, "b" + r);
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    long long first_ms = (std::min(a->start_ns, b->start_ns) - done_ns) / 1000000;
    worst_wait_ms = std::max(worst_wait_ms, first_ms);
    CHECK(first_ms <= 2000);
    // What the jobs were told is what the master that survives knows.
    CHECK(fence_on(sentinel.current_master(), name) >= max_fence(log));
  }
  check_serial(log);
  MESSAGE(rounds << " sentinel rounds in " << ms_between(suite_start)
                 << " ms; a waiter's job started at most " << worst_wait_ms
                 << " ms after the failover completed");
}

// The holder's lock never reaches the replica that is promoted: the replica is detached
// from its master (REPLICAOF NO ONE: it keeps what it had, and the sentinels still list it
// as the replica to promote) before the lock is taken. The holder must find its hold gone on
// the new master and stop its job (76) before the waiter queued behind it runs its own.
TEST_CASE("failover: sentinel, a hold the new master never got stops its job before the next") {
  SentinelSetup sentinel;
  TempDir dir;
  const std::string log = dir / "log", name = "lost";
  auto start = Clock::now();
  RedisServer& master = sentinel.current_master();
  RedisServer& replica = &master == &sentinel.data(0) ? sentinel.data(1) : sentinel.data(0);
  replica.cmd({"REPLICAOF", "NO", "ONE"});
  Spawned holder =
      spawn_on(sentinel.url(), stamped({"exec", "--lease", "3s", name}, log, "h", "sleep 30"));
  REQUIRE(poll_until([&] { return started(log, "h"); }, 10s));
  Spawned waiter =
      spawn_on(sentinel.url(),
               stamped({"exec", "--lease", "3s", "--wait", "30s", name}, log, "w", "sleep 0.1"));
  // Queued (its first attempts answered), not only subscribed.
  REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
  long long fence_before = fence_on(master, name);
  failover_to(sentinel, replica);
  RedisServer& promoted = replica;
  CHECK(promoted.cmd_int({"EXISTS", lock_key(name)}) == 0);  // the loss happened
  check_lost_hold(holder, waiter, log, fence_before);
  MESSAGE("sentinel lost-hold case in " << ms_between(start) << " ms");
}

// The promoted replica keeps an older fence than the tokens the old master handed out last
// (detached before them); the next token is max(stored + 1, server time in us) on the new
// master: above every earlier token, and within the server time around the acquisition.
TEST_CASE(
    "failover: sentinel, the fence does not go backwards although the new master's is older") {
  SentinelSetup sentinel;
  const std::string name = "fenced";
  RedisServer& master = sentinel.current_master();
  RedisServer& replica = &master == &sentinel.data(0) ? sentinel.data(1) : sentinel.data(0);
  auto take = [&](const std::string& owner) {
    RunResult r = on(sentinel.url(), {"lock", name, "--owner", owner, "--lease", "30s"});
    REQUIRE(r.status == 0);
    REQUIRE(on(sentinel.url(), {"unlock", name, "--owner", owner}).status == 0);
    return parse_json(r.out).at("fence").get<long long>();
  };
  long long replicated = take("a");
  REQUIRE(poll_until([&] { return fence_on(replica, name) == replicated; }, 10s));
  replica.cmd({"REPLICAOF", "NO", "ONE"});
  long long last = 0;
  for (int i = 0; i < 5; ++i) {
    long long f = take("b" + std::to_string(i));
    CHECK(f > std::max(last, replicated));
    last = f;
  }
  failover_to(sentinel, replica);
  RedisServer& promoted = replica;
  long long stored = fence_on(promoted, name);
  CHECK(stored == replicated);
  CHECK(stored < last);
  long long before = server_us(promoted);
  long long next = take("c");
  long long after = server_us(promoted);
  INFO("tokens before the failover up to " << last << ", new master's stored " << stored
                                           << ", next " << next);
  CHECK(next == fence_on(promoted, name));
  CHECK(next >= std::max(stored + 1, before));
  CHECK(next <= std::max(stored + 1, after));
  CHECK(next > last);
}

// A delay-pop --forever -- CMD consumer through three failovers: every item is processed
// at least once, none is left in the queue or among the dead letters.
TEST_CASE("failover: sentinel, a delay-pop -- CMD consumer across failovers loses no item") {
  SentinelSetup sentinel;
  TempDir dir;
  const int items = 60;
  std::string lines;
  for (int i = 0; i < items; ++i) lines += "p" + std::to_string(i) + "\n";
  write_file(dir / "lines", lines);
  RunResult pushed = run({"sh", "-c",
                          "exec \"$RL\" --url \"$URL\" delay-push q - --lines --delay 0 --id i "
                          "< \"$IN\""},
                         {{"RL", rlock_binary()}, {"URL", sentinel.url()}, {"IN", dir / "lines"}});
  REQUIRE(pushed.status == 0);
  auto start = Clock::now();
  Spawned consumer = spawn_on(
      sentinel.url(), {"delay-pop", "q", "--forever", "--visibility", "3s", "--", "sh", "-c",
                       "echo \"$RLOCK_ITEM_ID\" >> \"$0\"; sleep 0.1", dir / "done"});
  auto done = [&] {
    std::set<std::string> ids;
    if (!std::filesystem::exists(dir / "done")) return ids;
    std::istringstream in(read_file(dir / "done"));
    for (std::string id; in >> id;) ids.insert(id);
    return ids;
  };
  for (int round = 0; round < 3; ++round) {
    REQUIRE(poll_until([&] { return done().size() > static_cast<size_t>(round * 15); }, 20s));
    sentinel.failover();
  }
  bool all = poll_until([&] { return done().size() == static_cast<size_t>(items); }, 30s);
  consumer.kill(SIGTERM);
  INFO("consumer: " << consumer.err());
  CHECK(consumer.wait(deadline(10s)) == 0);
  CHECK(all);
  CHECK(done().size() == static_cast<size_t>(items));
  RedisServer& master = sentinel.current_master();
  CHECK(master.cmd_int({"EXISTS", "rlock:delay:{q}"}) == 0);
  RunResult dead = on(sentinel.url(), {"delay-pop", "q", "--dead"});
  CHECK(dead.status == 75);  // no dead letters
  MESSAGE("delay-pop consumer across 3 sentinel failovers in " << ms_between(start) << " ms");
}

// --- Cluster -----------------------------------------------------------------------------

TEST_CASE(
    "failover: cluster, 20 rounds of CLUSTER FAILOVER of the lock's master under a "
    "holder and a waiter") {
  ClusterSetup cluster;
  TempDir dir;
  const std::string log = dir / "log", name = "cf";
  int slot = redis::key_slot(lock_key(name));
  const int rounds = rounds_or(20);
  auto suite_start = Clock::now();
  long long worst_wait_ms = 0;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    std::string r = std::to_string(round), go = dir / ("go" + r);
    RedisServer& master = cluster.master_of_slot(slot);
    // A lease well past the bounds below (renewed every 4s, it runs at least 8s past the
    // failover): a waiter that slept through the release (and woke when the lease ran out)
    // fails the round.
    Spawned holder = spawn_on(
        cluster.url(), stamped({"exec", "--lease", "12s", "--wait", "30s", name}, log, "h" + r,
                               "while [ ! -e '" + go + "' ]; do sleep 0.05; done"));
    REQUIRE(poll_until([&] { return started(log, "h" + r); }, 10s));
    Spawned waiter = spawn_on(
        cluster.url(),
        stamped({"exec", "--lease", "3s", "--wait", "30s", name}, log, "w" + r, "sleep 0.1"));
    // Queued (its first attempts answered), not only subscribed.
    REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
    cluster.failover(master);
    long long done_ns = now_ns();
    touch(go);
    REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 30s));
    INFO(report(holder, "holder") << "\n" << report(waiter, "waiter"));
    int h = *holder.wait(Clock::now());
    CHECK((h == 0 || h == 76));
    CHECK(waiter.wait(Clock::now()) == 0);
    const Job* w = job_named(jobs_of(log), "w" + r);
    REQUIRE(w != nullptr);
    long long wait_ms = (w->start_ns - done_ns) / 1000000;
    worst_wait_ms = std::max(worst_wait_ms, wait_ms);
    // Woken by the release on the new master, not by the holder's lease running out
    // (+ 1.5 s for a loaded machine). A holder stopped because the old master's pause
    // outlasted its --timeout (1.5s, 76) releases after that time.
    CHECK(wait_ms <= 2000 + 1500 + (h == 76 ? 1500 : 0));
    // The slot's master now (a loaded machine may see the cluster fail over by itself).
    CHECK(fence_on(cluster.master_of_slot(slot), name) >= max_fence(log));
  }
  check_serial(log);
  MESSAGE(rounds << " cluster rounds in " << ms_between(suite_start)
                 << " ms; the waiter's job started at most " << worst_wait_ms
                 << " ms after the failover completed");
}

// The replica's replication is paused (CLIENT PAUSE WRITE holds its master's stream) while
// the lock is taken, and it takes over with CLUSTER FAILOVER FORCE: the new master never got
// the hold. The holder must be stopped (76) before the waiter's job starts.
TEST_CASE("failover: cluster, a hold the new master never got stops its job before the next") {
  ClusterSetup cluster;
  TempDir dir;
  const std::string log = dir / "log", name = "cl";
  int slot = redis::key_slot(lock_key(name));
  auto start = Clock::now();
  RedisServer& master = cluster.master_of_slot(slot);
  RedisServer* replica = nullptr;
  for (RedisServer* r : cluster.replicas()) {
    auto info = info_fields(r->cmd_str({"INFO", "replication"}));
    if (info["master_port"] == std::to_string(master.port())) replica = r;
  }
  REQUIRE(replica != nullptr);
  replica->cmd({"CLIENT", "PAUSE", "20000", "WRITE"});
  Spawned holder =
      spawn_on(cluster.url(), stamped({"exec", "--lease", "3s", name}, log, "h", "sleep 30"));
  REQUIRE(poll_until([&] { return started(log, "h"); }, 10s));
  Spawned waiter = spawn_on(cluster.url(), stamped({"exec", "--lease", "3s", "--wait", "30s", name},
                                                   log, "w", "sleep 0.1"));
  // Queued (its first attempts answered), not only subscribed.
  REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
  long long fence_before = fence_on(master, name);
  replica->cmd({"CLUSTER", "FAILOVER", "FORCE"});
  REQUIRE(poll_until([&] { return replica->cmd({"ROLE"}).at(0) == "master"; }, 10s));
  CHECK(replica->cmd_int({"EXISTS", lock_key(name)}) == 0);  // the loss happened
  replica->cmd({"CLIENT", "UNPAUSE"});
  cluster.await_converged();
  check_lost_hold(holder, waiter, log, fence_before);
  MESSAGE("cluster lost-hold case in " << ms_between(start) << " ms");
}

}  // namespace
}  // namespace rlock::test
