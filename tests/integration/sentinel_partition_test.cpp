// Sentinel deployments where a client is cut off from the sentinels by a proxy (its
// connections dropped, or stalled in a blackhole) while a failover happens, and a master
// that hangs while a waiter's attempt is on its way (issue 31): a write counts toward a
// hold only once a sentinel has confirmed its server as the master after it, and a request
// resent on another connection is judged as a reconnected waiter's. Each case fails without
// its fix: both jobs ran together.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "failover_jobs.hpp"
#include "lossy_proxy.hpp"

namespace rlock::test {
namespace {

// A proxy in front of each sentinel of `setup`, and the URL that reaches them through it.
struct SentinelProxies {
  std::vector<std::unique_ptr<LossyProxy>> proxies;
  std::string url;

  explicit SentinelProxies(SentinelSetup& setup) {
    std::string hosts;
    for (size_t i = 0; i < setup.sentinel_count(); ++i) {
      proxies.push_back(std::make_unique<LossyProxy>(setup.sentinel(i).port()));
      std::string port = proxies.back()->url().substr(proxies.back()->url().rfind(':') + 1);
      hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + port;
    }
    url = "redis-sentinel://" + hosts + "/" + setup.master_name();
  }
  void cut(LossyProxy::Cut how) {
    for (auto& p : proxies) p->cut(how);
  }
};

RedisServer& other_than(SentinelSetup& setup, const RedisServer& server) {
  return &server == &setup.data(0) ? setup.data(1) : setup.data(0);
}

// Sends `commands` (inline commands, each ending in \r\n) to `port` in one write and
// reads their replies: the server takes them all in one pass of its event loop, before any
// other client's request.
void send_in_one_write(int port, const std::string& commands, int replies) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::write(fd.get(), commands.data(), commands.size()) ==
          static_cast<ssize_t>(commands.size()));
  std::string got;
  char buf[4096];
  while (std::count(got.begin(), got.end(), '\n') < replies) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    REQUIRE(n > 0);
    got.append(buf, static_cast<size_t>(n));
  }
}

// A holder running `holder_job` under `exec --lease LEASE` through `holder_url`, and a
// waiter (`exec --lease LEASE --wait 60s`, a short job) through `waiter_url` queued behind it
// on `master`. Global options for the waiter (before `exec`) come first in `waiter_global`.
struct HolderAndWaiter {
  Spawned holder, waiter;
};
HolderAndWaiter holder_and_waiter(RedisServer& master, const std::string& log,
                                  const std::string& name, const std::string& lease,
                                  const std::string& holder_url, const std::string& holder_job,
                                  const std::string& waiter_url,
                                  std::vector<std::string> waiter_global = {}) {
  Spawned holder =
      spawn_on(holder_url, stamped({"exec", "--lease", lease, name}, log, "h", holder_job));
  REQUIRE(poll_until([&] { return started(log, "h"); }, 10s));
  waiter_global.insert(waiter_global.end(), {"exec", "--lease", lease, "--wait", "90s", name});
  Spawned waiter = spawn_on(waiter_url, stamped(waiter_global, log, "w", "sleep 0.1"));
  REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
  return {std::move(holder), std::move(waiter)};
}

// Both ended as expected (the waiter with 0), and their jobs ran one after the other.
void check_outcome(HolderAndWaiter& p, int holder_status, const std::string& log) {
  REQUIRE(Spawned::wait_all({&p.holder, &p.waiter}, Clock::now() + 90s));
  INFO(report(p.holder, "holder") << "\n" << report(p.waiter, "waiter"));
  INFO("log:\n" << read_file(log));
  CHECK(p.holder.wait(Clock::now()) == holder_status);
  CHECK(p.waiter.wait(Clock::now()) == 0);
  REQUIRE(jobs_of(log).size() == 2);
  check_serial(log);
}

TEST_CASE("sentinel partition: a holder cut off from the sentinels stops before the next job") {
  for (auto how : {LossyProxy::Cut::kDrop, LossyProxy::Cut::kStall}) {
    CAPTURE((how == LossyProxy::Cut::kDrop ? "dropped" : "stalled"));
    SentinelSetup sentinel;
    SentinelProxies cut_off(sentinel);
    TempDir dir;
    const std::string log = dir / "log", name = "cut-holder";
    HolderAndWaiter p = holder_and_waiter(sentinel.current_master(), log, name, "6s", cut_off.url,
                                          "sleep 30", sentinel.url());
    REQUIRE(sentinel.current_master().cmd_int({"WAIT", "1", "5000"}) == 1);  // replicated
    cut_off.cut(how);
    sentinel.failover();
    // The old master stayed writable for seconds; the holder's renewals there did not
    // count, so it stopped at its stop point, before the replicated hold expired.
    check_outcome(p, 76, log);
  }
}

TEST_CASE(
    "sentinel partition: a waiter cut off from the sentinels takes nothing on the demoted "
    "master") {
  SentinelSetup sentinel;
  SentinelProxies cut_off(sentinel);
  TempDir dir;
  const std::string log = dir / "log", name = "cut-waiter";
  RedisServer& master = sentinel.current_master();
  HolderAndWaiter p =
      holder_and_waiter(master, log, name, "3s", sentinel.url(), "sleep 12", cut_off.url);
  REQUIRE(master.cmd_int({"WAIT", "1", "5000"}) == 1);
  cut_off.cut(LossyProxy::Cut::kDrop);
  sentinel.failover();
  // The holder renews on the new master; on the old one, writable until a sentinel
  // converts it, its hold runs out while the job still runs.
  REQUIRE(p.holder.wait(Clock::now() + 30s).has_value());
  cut_off.cut(LossyProxy::Cut::kNone);
  check_outcome(p, 0, log);
}

// The hold never reaches the replica that is promoted (detached before it is taken, as in
// failover_test.cpp). The waiter is woken (a release-channel message, as any client may
// publish) in the same write that pauses the master, so its next attempt is on its way
// when the master hangs; the topology resends it to the new master, where the lock is free.
TEST_CASE("sentinel partition: an attempt resent to the new master is judged as reconnected") {
  SentinelSetup sentinel;
  TempDir dir;
  const std::string log = dir / "log", name = "resent";
  RedisServer& master = sentinel.current_master();
  RedisServer& replica = other_than(sentinel, master);
  replica.cmd({"REPLICAOF", "NO", "ONE"});
  HolderAndWaiter p = holder_and_waiter(master, log, name, "30s", sentinel.url(), "sleep 14",
                                        sentinel.url(), {"--timeout", "8s"});
  send_in_one_write(
      master.port(),
      "SPUBLISH " + lock_channel(name) + " \"changed 0\"\r\nCLIENT PAUSE 30000 ALL\r\n", 2);
  failover_to(sentinel, replica);
  CHECK(replica.cmd_int({"EXISTS", lock_key(name)}) == 0);  // the loss happened
  // The holder finds its hold gone on the new master at its next renewal (76); the waiter
  // took nothing there before the hold it saw could have run out.
  check_outcome(p, 76, log);
}

// --timeout bounds a command as a whole, the sentinels' questions and the clean-up
// included (at most --timeout + 200 ms, with a generous margin here): each sentinel asked
// gets a share of what is left, and a frozen master named by every sentinel is asked once.
TEST_CASE("sentinel partition: --timeout bounds every command with a frozen master or sentinels") {
  struct Command {
    std::vector<std::string> args;
    long long bound_ms;  // what it may take: its --timeout (or --wait) and a margin
  };
  const std::vector<Command> commands = {
      {{"--timeout", "1s", "lock", "-n", "t"}, 2000},
      {{"--timeout", "1s", "exec", "-n", "t", "--", "true"}, 2000},
      {{"--timeout", "1s", "exec", "-w", "3s", "t", "--", "true"}, 4000},
      {{"--timeout", "1s", "unlock", "--force", "t"}, 2000},
      {{"--timeout", "1s", "inspect"}, 2000},
  };
  for (bool sentinels_frozen : {false, true}) {
    CAPTURE(sentinels_frozen);
    SentinelSetup sentinel;
    RedisServer& master = sentinel.current_master();
    if (sentinels_frozen) {
      for (size_t i = 0; i < sentinel.sentinel_count(); ++i) sentinel.sentinel(i).freeze();
    } else {
      // No failover ends the freeze while the commands run.
      for (size_t i = 0; i < sentinel.sentinel_count(); ++i) {
        sentinel.sentinel(i).cmd(
            {"SENTINEL", "SET", sentinel.master_name(), "down-after-milliseconds", "60000"});
      }
      master.freeze();
    }
    for (const Command& c : commands) {
      std::string command;
      for (const auto& a : c.args) command += a + " ";
      CAPTURE(command);
      auto start = Clock::now();
      RunResult r = on(sentinel.url(), c.args);
      long long took = ms_between(start);
      CAPTURE(r.err);
      CHECK(r.status == 69);
      CHECK(took <= c.bound_ms);
      CHECK(line_count(r.err) == 1);
    }
    if (sentinels_frozen) {
      for (size_t i = 0; i < sentinel.sentinel_count(); ++i) sentinel.sentinel(i).thaw();
    } else {
      master.thaw();
    }
  }
}

}  // namespace
}  // namespace rlock::test
