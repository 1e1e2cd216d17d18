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

TEST_CASE("sentinel partition: a holder cut off from the sentinels stops before the next job") {
  for (auto how : {LossyProxy::Cut::kDrop, LossyProxy::Cut::kStall}) {
    CAPTURE((how == LossyProxy::Cut::kDrop ? "dropped" : "stalled"));
    SentinelSetup sentinel;
    SentinelProxies cut_off(sentinel);
    TempDir dir;
    const std::string log = dir / "log", name = "cut-holder";
    RedisServer& master = sentinel.current_master();
    Spawned holder =
        spawn_on(cut_off.url, stamped({"exec", "--lease", "6s", name}, log, "h", "sleep 30"));
    REQUIRE(poll_until([&] { return started(log, "h"); }, 10s));
    Spawned waiter =
        spawn_on(sentinel.url(),
                 stamped({"exec", "--lease", "6s", "--wait", "60s", name}, log, "w", "sleep 0.1"));
    REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
    REQUIRE(master.cmd_int({"WAIT", "1", "5000"}) == 1);  // the hold is on the replica too
    cut_off.cut(how);
    sentinel.failover();
    REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 60s));
    INFO(report(holder, "holder") << "\n" << report(waiter, "waiter"));
    INFO("log:\n" << read_file(log));
    // The old master stayed writable for seconds; the holder's renewals there did not
    // count, so it stopped at its stop point, before the replicated hold expired.
    CHECK(holder.wait(Clock::now()) == 76);
    CHECK(waiter.wait(Clock::now()) == 0);
    REQUIRE(jobs_of(log).size() == 2);
    check_serial(log);
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
  Spawned holder =
      spawn_on(sentinel.url(), stamped({"exec", "--lease", "3s", name}, log, "h", "sleep 12"));
  REQUIRE(poll_until([&] { return started(log, "h"); }, 10s));
  Spawned waiter = spawn_on(cut_off.url, stamped({"exec", "--lease", "3s", "--wait", "60s", name},
                                                 log, "w", "sleep 0.1"));
  REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
  REQUIRE(master.cmd_int({"WAIT", "1", "5000"}) == 1);
  cut_off.cut(LossyProxy::Cut::kDrop);
  sentinel.failover();
  // The holder renews on the new master; on the old one, writable until a sentinel
  // converts it, its hold runs out while the job still runs.
  REQUIRE(holder.wait(Clock::now() + 30s).has_value());
  cut_off.cut(LossyProxy::Cut::kNone);
  REQUIRE(waiter.wait(Clock::now() + 60s).has_value());
  INFO(report(holder, "holder") << "\n" << report(waiter, "waiter"));
  INFO("log:\n" << read_file(log));
  CHECK(holder.wait(Clock::now()) == 0);
  CHECK(waiter.wait(Clock::now()) == 0);
  REQUIRE(jobs_of(log).size() == 2);
  check_serial(log);
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
  Spawned holder =
      spawn_on(sentinel.url(), stamped({"exec", "--lease", "30s", name}, log, "h", "sleep 14"));
  REQUIRE(poll_until([&] { return started(log, "h"); }, 10s));
  Spawned waiter = spawn_on(
      sentinel.url(), stamped({"--timeout", "8s", "exec", "--lease", "30s", "--wait", "90s", name},
                              log, "w", "sleep 0.1"));
  REQUIRE(poll_until([&] { return queued(master, name) == 1; }, 10s));
  send_in_one_write(
      master.port(),
      "SPUBLISH " + lock_channel(name) + " \"changed 0\"\r\nCLIENT PAUSE 30000 ALL\r\n", 2);
  failover_to(sentinel, replica);
  CHECK(replica.cmd_int({"EXISTS", lock_key(name)}) == 0);  // the loss happened
  REQUIRE(Spawned::wait_all({&holder, &waiter}, Clock::now() + 90s));
  INFO(report(holder, "holder") << "\n" << report(waiter, "waiter"));
  INFO("log:\n" << read_file(log));
  // The holder finds its hold gone on the new master at its next renewal (76); the waiter
  // took nothing there before the hold it saw could have run out.
  CHECK(holder.wait(Clock::now()) == 76);
  CHECK(waiter.wait(Clock::now()) == 0);
  REQUIRE(jobs_of(log).size() == 2);
  check_serial(log);
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
