// Locks on a quorum of independent masters (redis-quorum://): majority, validity, the fence
// written back, members frozen, killed and restarted empty, exec losing its majority,
// waiters woken through any member, and the primitives that refuse a quorum.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "documented_acl.hpp"
#include "harness.hpp"
#include "redis/script.hpp"

namespace rlock::test {
namespace {

// Three (or more) members of their own, plain standalone servers whatever
// RLOCK_TEST_TOPOLOGY says: a quorum's members are independent masters.
struct Members {
  explicit Members(int n = 3, std::string password = "") : userinfo(password) {
    for (int i = 0; i < n; ++i)
      servers.emplace_back(RedisOptions{.requirepass = password, .test_topology = false});
  }
  std::string url() const {
    std::string out = "redis-quorum://" + (userinfo.empty() ? "" : ":" + userinfo + "@");
    for (size_t i = 0; i < servers.size(); ++i)
      out += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(servers[i].port());
    return out;
  }
  // Members holding `owner` in the lock hash of `name`, but for member `frozen` (which
  // would not answer).
  int holding(const std::string& name, const std::string& owner, int frozen = -1) const {
    int n = 0;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (static_cast<int>(i) != frozen)
        n += servers[i].cmd_int({"HEXISTS", lock_key(name), owner}) == 1;
    }
    return n;
  }
  // Every member has the lock's scripts: a grant that a fresh member answers NOSCRIPT later
  // than the drain's patience after a majority granted is not sent again (it took nothing
  // there), so a test that needs every member to hold loads them first, and then waits:
  // rlock returns at a majority.
  void cache_lock_scripts() const {
    for (const auto& s : servers) {
      for (const redis::Script* script :
           {&redis::scripts::quorum_member, &redis::scripts::lock_acquire})
        s.cmd({"SCRIPT", "LOAD", script->source});
    }
  }
  std::string userinfo;
  std::vector<RedisServer> servers;
};

RunResult on(const Members& q, std::vector<std::string> args, const Env& env = {},
             std::chrono::milliseconds timeout = 30s) {
  args.insert(args.begin(), {"--url", q.url()});
  return rlock_raw(args, env, timeout);
}

Spawned spawn_on(const Members& q, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {rlock_binary(), "--url", q.url()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawned(argv);
}

long long fence_of(const RunResult& r) {
  INFO("stdout: " << r.out << " stderr: " << r.err);
  REQUIRE(r.status == 0);
  return parse_json(r.out).at("fence").get<long long>();
}

// A member's clock, microseconds since the epoch.
long long server_us(const RedisServer& s) {
  const auto t = s.cmd({"TIME"});
  return std::stoll(t.at(0)) * 1'000'000 + std::stoll(t.at(1));
}

bool one_line(const std::string& err) { return !err.empty() && err.find('\n') == err.size() - 1; }

TEST_CASE("quorum: malformed URLs and primitives without majority semantics: one line, exit 64") {
  Members q;
  const std::string a = "127.0.0.1:" + std::to_string(q.servers[0].port());
  const std::string b = "127.0.0.1:" + std::to_string(q.servers[1].port());
  const std::string c = "127.0.0.1:" + std::to_string(q.servers[2].port());
  struct Case {
    std::string url, says;
  } cases[] = {
      {"redis-quorum://" + a + "," + b, "odd number of members from 3 to 9, not 2"},
      {"redis-quorum://" + a, "not 1"},
      {"redis-quorum://" + a + "," + b + "," + c + "," + a, "not 4"},
      {"redis-quorum://h1,h2,h3,h4,h5,h6,h7,h8,h9,h10,h11", "not 11"},
      {"redis-quorum://" + a + "," + b + "," + a, "named twice"},
      {"redis-quorum://" + a + "," + b + ",redis://" + c, "invalid redis URL"},
      {"redis-quorum://" + a + "," + b + "," + c + "?db=1", "takes no parameters"},
  };
  for (const auto& k : cases) {
    auto r = rlock_raw({"--url", k.url, "lock", "L"});
    INFO(k.url << ": " << r.err);
    CHECK(r.status == 64);
    CHECK(r.err.find(k.says) != std::string::npos);
    CHECK(one_line(r.err));
  }
  auto tls =
      on(q, {"--tls-insecure", "lock", "L"});  // the plain scheme: the line names its TLS one
  CHECK(tls.status == 64);
  CHECK(tls.err.find("rediss-quorum://") != std::string::npos);
  CHECK(one_line(tls.err));
  std::vector<std::vector<std::string>> refused = {
      {"sem", "exec", "--permits", "2", "s", "--", "true"},
      {"latch", "set", "c", "1"},
      {"limit", "r", "--rate", "10", "--per", "1s"},
      {"delay-push", "q", "--delay", "0", "x"},
      {"delay-pop", "q"},
      {"lock", "L", "--sync-replicas", "1"},
  };
  for (const auto& args : refused) {
    auto r = on(q, args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.status == 64);
    CHECK(one_line(r.err));
  }
  for (const auto& s : q.servers) CHECK(s.cmd_int({"DBSIZE"}) == 0);  // nothing half-written
}

TEST_CASE("quorum: lock, re-enter, busy, unlock and force on every member, with the validity") {
  Members q;
  q.cache_lock_scripts();
  auto r = on(q, {"lock", "L", "--owner", "alice", "--lease", "30s"});
  long long fence = fence_of(r);
  auto j = parse_json(r.out);
  CHECK(j.at("lease_ms") == 30000);
  CHECK(j.at("validity_ms").get<long long>() > 29000);
  CHECK(j.at("validity_ms").get<long long>() <= 30000 - 300 - 2);
  CHECK(poll_until([&] { return q.holding("L", "alice") == 3; }, 5s));
  // Written back to a majority before it was printed; the third member's write-back may
  // still be on its way (rlock does not wait for it), or be dropped with the connection.
  int raised = 0;
  for (const auto& s : q.servers) raised += s.cmd_int({"GET", fence_key("L")}) >= fence;
  CHECK(raised >= 2);

  // A re-entry reports the highest token its majority has now: at least the hold's (a
  // member that granted after the majority answered may have taken a later one).
  r = on(q, {"lock", "L", "--owner", "alice"});
  CHECK(fence_of(r) >= fence);
  CHECK(parse_json(r.out).at("count") == 2);

  r = on(q, {"lock", "L", "--owner", "bob"});
  CHECK(r.status == 75);
  CHECK(parse_json(r.out).at("holders")[0].at("owner") == "alice");

  CHECK(on(q, {"unlock", "L", "--owner", "alice"}).status == 0);
  CHECK(on(q, {"unlock", "L", "--owner", "alice"}).status == 0);
  CHECK(q.holding("L", "alice") == 0);

  CHECK(fence_of(on(q, {"lock", "L", "--owner", "bob"})) > fence);
  r = on(q, {"unlock", "L", "--force"});
  CHECK(r.status == 0);
  CHECK(q.holding("L", "bob") == 0);

  // Shared holds and a MultiLock.
  CHECK(on(q, {"lock", "-s", "R", "--owner", "r1"}).status == 0);
  CHECK(on(q, {"lock", "-s", "R", "--owner", "r2"}).status == 0);
  CHECK(on(q, {"lock", "R", "--owner", "w"}).status == 75);
  r = on(q, {"exec", "A", "B", "--", "true"});
  INFO(r.err);
  CHECK(r.status == 0);
}

// Whether member `s` comes to store `token` for `name` within 5 s: rlock returns at a
// majority, and the last member may run the grant after that.
bool holds_token(const RedisServer& s, const std::string& name, long long token) {
  return poll_until(
      [&] {
        return s.cmd_str({"GET", fence_key(name)}) == std::to_string(token);
      },
      5s);
}

// Scripts (EVAL, EVALSHA) the members ran since their statistics were reset.
long long scripts_run(const Members& q) {
  long long n = 0;
  for (const auto& s : q.servers) {
    const std::string info = s.cmd_str({"INFO", "commandstats"});
    for (const std::string stat : {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="}) {
      const auto at = info.find(stat);
      if (at != std::string::npos) n += std::stoll(info.substr(at + stat.size()));
    }
  }
  return n;
}

TEST_CASE("quorum: a hold and a re-entry whose members agree on the token write nothing back") {
  Members q;
  q.cache_lock_scripts();
  for (const auto& s : q.servers) s.cmd({"CONFIG", "RESETSTAT"});
  // Every member hands out the floor the quorum proposed (its clock and a second): the same
  // token on each, which a majority has without a write-back round.
  const long long before = server_us(q.servers[0]);
  const long long fence = fence_of(on(q, {"lock", "L", "--owner", "alice"}));
  for (const auto& s : q.servers) CHECK(holds_token(s, "L", fence));
  CHECK(fence > before + 900'000);
  CHECK(poll_until([&] { return scripts_run(q) >= 6; }, 5s));
  CHECK(scripts_run(q) == 6);

  for (const auto& s : q.servers) s.cmd({"CONFIG", "RESETSTAT"});
  auto r = on(q, {"lock", "L", "--owner", "alice"});
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out).at("count") == 2);
  // The restart rule's check and the request on each member, and no write-back round
  // (which would be three more before the process had exited).
  CHECK(poll_until([&] { return scripts_run(q) >= 6; }, 5s));
  CHECK(scripts_run(q) == 6);
}

// The floor comes from the client's clock: a clock far ahead must not push every later
// token out of reach. The members then hand out their own tokens and the largest is
// written back, as when they disagree for any other reason.
TEST_CASE("quorum: a client clock a minute ahead proposes no token floor; 30 s ahead does") {
  REQUIRE_MESSAGE(run({"faketime", "-f", "+1h", "true"}).status == 0,
                  "faketime is needed (scripts/install-deps.sh faketime)");
  Members q;
  q.cache_lock_scripts();
  auto faked = [&](const std::string& offset, const std::string& name) {
    std::vector<std::string> argv = {"faketime", "-f",   offset, rlock_binary(), "--url",
                                     q.url(),    "lock", name,   "--owner",      "o"};
    RunResult r = run(argv);
    return fence_of(r);
  };
  long long before = server_us(q.servers[0]);
  const long long ahead = faked("+30s", "A");
  CHECK(ahead >= before + 30'000'000);
  for (const auto& s : q.servers) CHECK(holds_token(s, "A", ahead));

  before = server_us(q.servers[0]);
  const long long far = faked("+2m", "B");
  CHECK(far >= before);
  CHECK(far < server_us(q.servers[0]) + 1'000'000);  // a member's own clock, not the client's
}

TEST_CASE("quorum: a waiter subscribes on a member that comes back during its wait") {
  Members q;
  q.servers[2].stop();
  REQUIRE(on(q, {"lock", "B", "--owner", "holder"}).status == 0);
  auto waiter = spawn_on(q, {"exec", "--wait", "30s", "B", "--", "echo", "ran"});
  auto subscribed = [&](size_t i) { return subscribers(q.servers[i], lock_channel("B")) == 1; };
  REQUIRE(poll_until([&] { return subscribed(0) && subscribed(1); }, 10s));
  q.servers[2].restart();
  // Its releases and its order of arrival count for the waiter once it answers again.
  CHECK(poll_until([&] { return subscribed(2); }, 10s));
  CHECK(on(q, {"unlock", "B", "--owner", "holder"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << waiter.err());
  CHECK(waiter.out() == "ran\n");
}

TEST_CASE("quorum: a frozen member: the other two grant in about a round trip; two frozen: 69") {
  Members q;
  q.servers[2].freeze();
  auto start = Clock::now();
  auto r = on(q, {"--timeout", "3s", "lock", "L", "--owner", "alice"});
  long long took = ms_between(start);
  fence_of(r);
  CHECK(took < 1500);  // a process start and one round trip, never the 3 s timeout
  CHECK(on(q, {"unlock", "L", "--owner", "alice", "--timeout", "3s"}).status == 0);
  CHECK(q.holding("L", "alice", 2) == 0);
  q.servers[2].thaw();
  // Whatever the thawed member ran late, the others make a majority for the next owner.
  CHECK(on(q, {"lock", "L", "--owner", "bob"}).status == 0);

  q.servers[0].freeze();
  q.servers[1].freeze();
  start = Clock::now();
  r = on(q, {"--timeout", "500ms", "lock", "M", "--owner", "bob"});
  CHECK(r.status == 69);
  CHECK(r.err.find("fewer than a majority") != std::string::npos);
  // The one member that answered granted it, and took it back when the request failed.
  CHECK(q.servers[2].cmd_int({"EXISTS", lock_key("M")}) == 0);
  q.servers[0].thaw();
  q.servers[1].thaw();
  // ...and every grant, the late ones too, is given back by the request's id.
  CHECK(poll_until([&] { return q.holding("M", "bob") == 0; }, 5s));
  CHECK(on(q, {"lock", "M", "--owner", "carol"}).status == 0);
}

TEST_CASE("quorum: the fence never goes backwards across quorums {X,Y}, {Y,Z}, {X,Z}") {
  Members q;
  auto& x = q.servers[0];
  auto& y = q.servers[1];
  auto& z = q.servers[2];
  // Y's counter far ahead (a member whose clock runs ahead, or that handed out more).
  const long long ahead = 9'000'000'000'000'000LL;
  y.cmd({"SET", fence_key("F"), std::to_string(ahead)});
  // The quorum's first use with every member answering (a member frozen under it and
  // thawed later than kJoinSlack would count as restarted empty: the restart rule), which
  // caches the scripts that a frozen member runs once thawed, after rlock exited.
  REQUIRE(on(q, {"lock", "warm", "--owner", "a"}).status == 0);
  REQUIRE(on(q, {"unlock", "warm", "--owner", "a"}).status == 0);

  // Each hold is an exec's: its release goes to the frozen member on the connection its
  // grant went on, so that member, thawed, runs both in order and is free again.
  auto fence = [&](RedisServer& frozen) {
    frozen.freeze();
    auto r = on(q, {"--timeout", "1s", "exec", "F", "--", "sh", "-c", "echo $RLOCK_FENCE"});
    frozen.thaw();
    INFO(r.err);
    REQUIRE(r.status == 0);
    return std::stoll(r.out);
  };
  long long f1 = fence(z);  // {X,Y}
  CHECK(f1 > ahead);
  long long f2 = fence(x);  // {Y,Z}
  CHECK(f2 > f1);
  long long f3 = fence(y);  // {X,Z}
  CHECK(f3 > f2);
  // The plain maximum of X and Z's own counters would have gone back below f1.
}

// The levels of doctor's `restart` findings, member by member ("ok ok warn ").
std::string restart_levels(const RunResult& doctor) {
  INFO("stdout: " << doctor.out << " stderr: " << doctor.err);
  const json report = parse_json(doctor.out);
  std::string levels;
  for (const auto& f : report.at("findings")) {
    if (f.at("check").get<std::string>() == "restart")
      levels += f.at("level").get<std::string>() + " ";
  }
  return levels;
}

TEST_CASE("quorum: a member restarted empty does not count until the longest lease has passed") {
  Members q;
  CHECK(fence_of(on(q, {"lock", "P", "--owner", "a", "--lease", "3s"})) > 0);
  // The quorum in use for an hour (rlock's first write on each member).
  for (auto& s : q.servers) {
    auto t = s.cmd({"TIME"});
    s.cmd({"SET", "rlock:quorum:first-write", std::to_string(std::stoll(t[0]) * 1000 - 3'600'000)});
  }
  auto restarted = Clock::now();
  q.servers[2].restart();  // its data, the hold among them, is gone
  // doctor says which member does not count, and for how long.
  auto doctor = on(q, {"doctor"});
  CHECK(restart_levels(doctor) == "ok ok warn ");
  CHECK(doctor.out.find("not counted towards a majority for another") != std::string::npos);
  q.servers[0].freeze();
  // Z would make a second majority with Y... if it counted.
  auto r = on(q, {"--timeout", "500ms", "lock", "P", "--owner", "b", "--lease", "3s"});
  CHECK(r.status == 69);
  CHECK(q.holding("P", "b", 0) == 0);
  r = on(q, {"--timeout", "500ms", "lock", "Q", "--owner", "b", "--lease", "1s"});
  CHECK(r.status == 69);
  CHECK(r.err.find("not counted until their data is older than the longest lease") !=
        std::string::npos);
  // Counted again once its uptime passed the longest lease (3 s) any member was asked for.
  CHECK(poll_until(
      [&] {
        return on(q, {"--timeout", "500ms", "lock", "Q", "--owner", "b", "--lease", "1s"}).status ==
               0;
      },
      10s, 200ms));
  CHECK(ms_between(restarted) >= 2900);
  q.servers[0].thaw();
}

// A member not counted yet decides nothing: a busy lock answered by it and by one counted
// member is still busy once the other counted member answers, not "fewer than a majority
// answered" (exit 69, which also ends a --wait).
TEST_CASE("quorum: a busy lock is busy (75) while a member is not counted yet") {
  Members q;
  REQUIRE(on(q, {"lock", "warm", "--owner", "a"}).status == 0);  // a 30 s lease remembered
  for (auto& s : q.servers) {
    s.cmd({"SET", "rlock:quorum:first-write", std::to_string(server_us(s) / 1000 - 3'600'000)});
  }
  q.servers[2].restart();  // not counted for 30 s
  REQUIRE(on(q, {"lock", "L", "--owner", "holder"}).status == 0);
  for (int i = 0; i < 3; ++i) {
    // The second counted member answers last.
    q.servers[1].cmd({"CLIENT", "PAUSE", "300", "ALL"});
    auto r = on(q, {"--timeout", "5s", "lock", "L", "--owner", "other", "-n"});
    INFO("stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.status == 75);
    CHECK(parse_json(r.out).at("holders").at(0).at("owner") == "holder");
  }
}

// A refusal leaves nothing behind: a member that finds the lock free (it missed the
// holder's grant) and answers after the busy majority grants it to the refused request;
// that grant is waited for and given back, or given back by the request's id.
TEST_CASE("quorum: a refused lock leaves no grant on a member that answered late") {
  Members q;
  q.cache_lock_scripts();
  q.servers[2].cmd({"CLIENT", "PAUSE", "500", "ALL"});  // misses the holder's grant
  REQUIRE(on(q, {"lock", "L", "--owner", "holder", "--lease", "60s"}).status == 0);
  // rlock returned at the majority and reset its connections: the paused member never
  // runs the grant.
  q.servers[2].cmd({"CLIENT", "UNPAUSE"});
  REQUIRE(q.servers[2].cmd_int({"EXISTS", lock_key("L")}) == 0);
  for (int i = 0; i < 30; ++i) {
    CAPTURE(i);
    auto r = on(q, {"lock", "L", "--owner", "late", "-n"});
    REQUIRE(r.status == 75);
    CHECK_FALSE(poll_until(
        [&] {
          return q.servers[2].cmd_int({"HEXISTS", lock_key("L"), "late"}) == 1;
        },
        200ms));
  }
}

// INFO formats a page of text: a member's check asks it once a data set and keeps the start
// (rlock:quorum:started), and the restart rule, in a lock and in doctor, reads a kept start
// as the server's: a restart that kept the data keeps the earlier start.
TEST_CASE("quorum: a member's check asks INFO once a data set and reads the start it kept") {
  Members q;
  REQUIRE(on(q, {"lock", "A", "--owner", "a"}).status == 0);  // a lease of 30 s
  CHECK(poll_until([&] { return q.holding("A", "a") == 3; }, 5s));
  for (auto& s : q.servers) {
    const long long now = server_us(s) / 1000;
    const std::string info = s.cmd_str({"INFO", "server"});
    const auto at = info.find("uptime_in_seconds:") + std::string("uptime_in_seconds:").size();
    const long long started = std::stoll(s.cmd_str({"GET", "rlock:quorum:started"}));
    // Both sides read INFO's whole seconds, at different moments: each is within a second
    // after the server's start.
    CHECK(std::llabs(started - (now - std::stoll(info.substr(at)) * 1000)) < 1000);
    CHECK(started > now - (std::stoll(info.substr(at)) + 2) * 1000);
    s.cmd({"CONFIG", "RESETSTAT"});
  }
  REQUIRE(on(q, {"lock", "B", "--owner", "a"}).status == 0);
  // (Awaited without INFO, which would count itself.)
  CHECK(poll_until([&] { return q.holding("B", "a") == 3; }, 5s));
  for (auto& s : q.servers) {
    const std::string stats = s.cmd_str({"INFO", "commandstats"});
    CHECK(stats.find("cmdstat_evalsha:calls=2,") != std::string::npos);
    CHECK(stats.find("cmdstat_info:") == std::string::npos);
  }

  // The quorum in use for an hour; the third member's data kept through a restart a second
  // ago, in a run that began after the others' first use: its kept start says so.
  for (auto& s : q.servers) {
    const long long now = server_us(s) / 1000;
    s.cmd({"SET", "rlock:quorum:first-write", std::to_string(now - 3'600'000)});
    s.cmd({"SET", "rlock:quorum:started", std::to_string(now - 7'200'000)});
  }
  const long long now = server_us(q.servers[2]) / 1000;
  q.servers[2].cmd({"SET", "rlock:quorum:first-write", std::to_string(now - 500)});
  q.servers[2].cmd({"SET", "rlock:quorum:started", std::to_string(now - 1000)});
  CHECK(restart_levels(on(q, {"doctor"})) == "ok ok warn ");
  q.servers[0].freeze();
  auto r = on(q, {"--timeout", "500ms", "lock", "C", "--owner", "b"});
  CHECK(r.status == 69);
  CHECK(r.err.find("not counted until their data is older than the longest lease") !=
        std::string::npos);
  // Only digits are a start (not Lua's "1e3", a start in 1970): INFO's uptime is read
  // instead, by lock and doctor alike (shorter than the hour-long lease remembered here);
  // a value that is no number at all does not stop doctor.
  // (Its data set began now: after its real start, however young the server is.)
  q.servers[2].cmd(
      {"SET", "rlock:quorum:first-write", std::to_string(server_us(q.servers[2]) / 1000)});
  q.servers[2].cmd({"SET", "rlock:quorum:started", "1e3"});
  q.servers[2].cmd({"SET", "rlock:quorum:longest-lease", "3600000"});
  q.servers[1].cmd({"SET", "rlock:quorum:longest-lease", "abc"});
  CHECK(on(q, {"--timeout", "500ms", "lock", "C", "--owner", "b"}).status == 69);
  q.servers[0].thaw();
  q.servers[1].cmd({"SET", "rlock:quorum:longest-lease", "abc"});
  CHECK(restart_levels(on(q, {"doctor"})) == "ok ok warn ");
  for (auto& s : q.servers) s.cmd({"SET", "rlock:quorum:longest-lease", "30000"});
  q.servers[0].freeze();
  // A start an hour ago: the earlier run outlived every lease.
  q.servers[2].cmd({"SET", "rlock:quorum:started", std::to_string(now - 3'600'000)});
  r = on(q, {"--timeout", "500ms", "lock", "C", "--owner", "b"});
  CHECK(r.status == 0);
  q.servers[0].thaw();
  CHECK(restart_levels(on(q, {"doctor"})) == "ok ok ok ");
}

// A quorum is meant to outlive a member: doctor reports the one that is down as a finding
// (exit 1) and examines the others, instead of giving up at the first refused connection.
TEST_CASE("quorum: doctor reports a member that does not answer and still examines the rest") {
  Members q;
  q.servers[1].stop();
  auto checks_of = [](const RunResult& r) {
    INFO("stdout: " << r.out << " stderr: " << r.err);
    REQUIRE(r.status == 1);
    CHECK(r.err.empty());
    std::map<std::string, std::string> levels;  // "server check" -> level
    const json report = parse_json(r.out);
    for (const auto& f : report.at("findings"))
      levels[f.at("server").get<std::string>() + " " + f.at("check").get<std::string>()] =
          f.at("level").get<std::string>();
    return levels;
  };
  const std::string down = "127.0.0.1:" + std::to_string(q.servers[1].port());
  const std::string up = "127.0.0.1:" + std::to_string(q.servers[2].port());
  auto levels = checks_of(on(q, {"doctor"}));
  CHECK(levels[down + " reachable"] == "fail");
  CHECK(levels.count(down + " version") == 0);
  CHECK(levels[up + " version"] == "ok");
  CHECK(levels[up + " restart"] == "ok");
  CHECK(levels["quorum members"] == "warn");  // 2 of 3: locks are still taken
  q.servers[2].stop();
  levels = checks_of(on(q, {"doctor"}));
  CHECK(levels[up + " reachable"] == "fail");
  CHECK(levels["quorum members"] == "fail");  // 1 of 3: no majority
}

TEST_CASE("quorum: doctor fails a member that is another member's server under a second name") {
  Members q;
  const std::string port = std::to_string(q.servers[0].port());
  const std::string url = "redis-quorum://127.0.0.1:" + port + ",localhost:" + port +
                          ",127.0.0.1:" + std::to_string(q.servers[1].port());
  auto distinct = [](const RunResult& r) {
    INFO("stdout: " << r.out << " stderr: " << r.err);
    std::map<std::string, std::string> levels;  // server -> level of its "distinct" finding
    const json report = parse_json(r.out);
    for (const auto& f : report.at("findings")) {
      if (f.at("check") == "distinct")
        levels[f.at("server").get<std::string>()] = f.at("level").get<std::string>();
    }
    return levels;
  };
  auto r = rlock_raw({"--url", url, "doctor"});
  CHECK(r.status == 1);
  CHECK(distinct(r) == std::map<std::string, std::string>{{"localhost:" + port, "fail"}});
  CHECK(distinct(on(q, {"doctor"})).empty());
}

// Two execs of one owner exclude each other on a quorum too (an exec hold is exclusive even
// against its own owner), also while a member is frozen.
TEST_CASE("quorum: two execs sharing an owner never run together, a member frozen or not") {
  Members q;
  for (int frozen = 0; frozen < 2; ++frozen) {
    CAPTURE(frozen);
    if (frozen) q.servers[2].freeze();
    Spawned first(std::vector<std::string>{rlock_binary(), "--url", q.url(), "--timeout", "1s",
                                           "exec", "--owner", "shared", "S", "--", "sh", "-c",
                                           "echo started; exec sleep 30"});
    REQUIRE(first.read_line(deadline(10s)) == std::optional<std::string>("started"));
    auto second = on(q, {"--timeout", "1s", "exec", "--owner", "shared", "S", "--", "true"});
    INFO("second: " << second.err);
    CHECK(second.status == 75);
    first.kill(SIGTERM);
    CHECK(first.wait(deadline(10s)).has_value());
    if (frozen) q.servers[2].thaw();
  }
}

// Member 2 lost the outer hold (a DEL: data lost on a minority): it grants the nested
// request, which the other two refuse as waiting for itself. Refused (65) at once, not
// split and tried again until --wait runs out, and member 2's grant is given back.
TEST_CASE("quorum: a nested exec is refused at once while a member lacks the outer hold") {
  Members q;
  q.cache_lock_scripts();
  TempDir dir;
  const std::string go = dir / "go";
  const std::string inner = rlock_binary() + " --url " + q.url() + " exec --wait 20s N -- true";
  Spawned outer(std::vector<std::string>{
      rlock_binary(), "--url", q.url(), "exec", "--owner", "outer", "N", "--", "sh", "-c",
      "echo started; while [ ! -e " + go + " ]; do sleep 0.05; done; " + inner +
          "; echo \"inner $?\""});
  REQUIRE(outer.read_line(deadline(10s)) == std::optional<std::string>("started"));
  REQUIRE(poll_until([&] { return q.holding("N", "outer") == 3; }, 5s));
  q.servers[2].cmd({"DEL", lock_key("N")});
  std::ofstream(go).put('\n');
  const auto asked = Clock::now();
  auto line = outer.read_line(deadline(30s));
  const auto answered = Clock::now();
  INFO("stderr: " << outer.err());
  CHECK(line == std::optional<std::string>("inner 65"));
  CHECK(ms_between(asked, answered) < 5000);
  CHECK(q.servers[2].cmd_int({"EXISTS", lock_key("N")}) == 0);
  CHECK(outer.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

// A hold on a bare majority (member 0 lost it) whose other holder is frozen: the release
// on member 2 and member 0's "not held" decide nothing, so unlock says it could not tell
// (69), not that the lock was not held (75); member 1 releases once it runs again.
TEST_CASE("quorum: an unlock that a holding member does not answer is 69, not 'not held'") {
  Members q;
  REQUIRE(on(q, {"lock", "L", "--owner", "o", "--lease", "60s"}).status == 0);
  REQUIRE(poll_until([&] { return q.holding("L", "o") == 3; }, 5s));
  q.servers[0].cmd({"DEL", lock_key("L")});
  q.servers[1].freeze();
  auto r = on(q, {"--timeout", "2s", "unlock", "L", "--owner", "o"});
  q.servers[1].thaw();
  INFO("stderr: " << r.err);
  CHECK(r.status == 69);
  CHECK(one_line(r.err));
  CHECK(r.err.find("fewer than a majority of the 3 quorum members released the lock or said it "
                   "is not held") != std::string::npos);
  CHECK(poll_until([&] { return q.holding("L", "o") == 0; }, 5s));
}

TEST_CASE("quorum: exec stops its job (76) when two of three members stop answering") {
  Members q;
  TempDir dir;
  auto job = spawn_on(q, {"--timeout", "300ms", "exec", "--lease", "1500ms", "J", "--", "sh", "-c",
                          "touch " + dir / "started" + "; exec sleep 30"});
  REQUIRE(poll_until([&] { return std::filesystem::exists(dir / "started"); }, 10s));
  q.servers[0].freeze();
  q.servers[1].freeze();
  auto frozen = Clock::now();
  auto status = job.wait(deadline(10s));
  q.servers[0].thaw();
  q.servers[1].thaw();
  CHECK(status.value_or(kStillRunning) == 76);
  CHECK(ms_between(frozen, job.exit_time()) < 1500);  // stopped before the lease could end
}

TEST_CASE("quorum: exec stops its job (76) when a majority says the hold is gone") {
  Members q;
  TempDir dir;
  auto job = spawn_on(q, {"exec", "--lease", "1500ms", "J", "--", "sh", "-c",
                          "touch " + dir / "started" + "; exec sleep 30"});
  REQUIRE(poll_until([&] { return std::filesystem::exists(dir / "started"); }, 10s));
  q.servers[0].cmd({"DEL", lock_key("J")});
  q.servers[1].cmd({"DEL", lock_key("J")});
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 76);
}

TEST_CASE("quorum: a waiter sleeps on every member and is woken through the ones that answer") {
  Members q;
  CHECK(on(q, {"lock", "W", "--owner", "alice", "--lease", "60s"}).status == 0);
  auto waiter = spawn_on(q, {"--timeout", "1s", "lock", "W", "--owner", "bob", "--wait", "20s"});
  REQUIRE(poll_until(
      [&] {
        return q.servers[1].cmd_int({"ZCARD", lock_key("W") + ":waiters"}) == 1;
      },
      5s));
  q.servers[0].freeze();  // the release and its grant reach the waiter through Y and Z only
  auto released = Clock::now();
  CHECK(on(q, {"unlock", "W", "--owner", "alice", "--timeout", "1s"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(ms_between(released, waiter.exit_time()) < 5000);  // never the 60 s lease
  q.servers[0].thaw();
  CHECK(parse_json(waiter.out()).at("acquired") == true);
}

TEST_CASE(
    "quorum: a member stopped before the wait begins holds up neither its start nor its end") {
  Members q;
  CHECK(on(q, {"lock", "F", "--owner", "alice", "--lease", "60s"}).status == 0);
  q.servers[2].freeze();
  // The subscriptions go out to all three at once and the wait begins once two confirmed:
  // one member after another, the stopped one would hold it up for the whole --timeout.
  const auto started = Clock::now();
  auto waiter = spawn_on(q, {"--timeout", "6s", "exec", "--wait", "30s", "F", "--", "echo", "ran"});
  REQUIRE(poll_until(
      [&] {
        return q.servers[0].cmd_int({"ZCARD", lock_key("F") + ":waiters"}) == 1;
      },
      10s));
  CHECK(ms_between(started) < 3000);
  auto released = Clock::now();
  CHECK(on(q, {"unlock", "F", "--owner", "alice", "--timeout", "1s"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << waiter.err());
  CHECK(waiter.out() == "ran\n");
  CHECK(ms_between(released, waiter.exit_time()) < 3000);
  q.servers[2].thaw();
}

TEST_CASE("quorum: 6 processes x 10 exec increments of one file lose none, every waiter served") {
  Members q;
  TempDir dir;
  const std::string counter = dir / "counter";
  write_file(counter, "0\n");
  const std::string loop =
      R"(for i in $(seq 10); do "$RL" --url "$URL" exec --wait 60s counter -- )"
      R"(sh -c 'n=$(cat "$F"); echo $((n+1)) > "$F"' || exit 1; done)";
  const Env env{{"RL", rlock_binary()}, {"URL", q.url()}, {"F", counter}};
  std::vector<Spawned> loops;
  for (int i = 0; i < 6; ++i) loops.emplace_back(std::vector<std::string>{"sh", "-c", loop}, env);
  const auto until = deadline(120s);
  for (auto& proc : loops) {
    INFO("stderr: " << proc.err());
    CHECK(proc.wait(until).value_or(kStillRunning) == 0);
  }
  CHECK(read_file(counter) == "60\n");
  // A member may still hold a grant for a waiter that got its majority elsewhere and is
  // gone: it lapses with the claim window (2 s), as on one server.
  for (const auto& s : q.servers) {
    CHECK(poll_until([&] { return s.cmd_int({"EXISTS", lock_key("counter")}) == 0; }, 5s));
  }
}

TEST_CASE("quorum: a member that lost its script cache answers NOSCRIPT, and the lock goes on") {
  Members q;
  CHECK(on(q, {"lock", "S", "--owner", "a"}).status == 0);
  for (const auto& s : q.servers) s.cmd({"SCRIPT", "FLUSH"});
  CHECK(on(q, {"unlock", "S", "--owner", "a"}).status == 0);
  CHECK(q.holding("S", "a") == 0);
}

TEST_CASE("quorum: a member without the scripts that answers after the majority still grants") {
  // Fresh members: all three answer NOSCRIPT. The third is paused, so its NOSCRIPT comes
  // after the other two granted: it gets the script's source before rlock exits, and holds
  // too (else the next waiter would take it there, and the holder would have a bare
  // majority).
  Members q;
  q.servers[2].cmd({"CLIENT", "PAUSE", "30", "ALL"});
  CHECK(on(q, {"lock", "L", "--owner", "a"}).status == 0);
  CHECK(poll_until([&] { return q.holding("L", "a") == 3; }, 5s));
}

TEST_CASE("quorum: members with a password: from the URL or RLOCK_PASSWORD; a wrong one is 69") {
  Members q(3, "s3cret");
  CHECK(fence_of(on(q, {"lock", "P", "--owner", "a"})) > 0);
  std::string bare = q.url();
  bare.replace(bare.find(":s3cret@"), 8, "");
  auto r =
      rlock_raw({"--url", bare, "unlock", "P", "--owner", "a"}, {{"RLOCK_PASSWORD", "s3cret"}});
  INFO(r.err);
  CHECK(r.status == 0);
  r = rlock_raw({"--url", bare, "lock", "P", "--owner", "a"}, {{"RLOCK_PASSWORD", "wrong"}});
  CHECK(r.status == 69);
  CHECK(one_line(r.err));
  CHECK(r.err.find("wrong") == std::string::npos);  // no password in a message
}

// Two members frozen under AUTH: the line names them, not the member that logged in and
// was then left no time to answer.
TEST_CASE("quorum: members frozen under AUTH are named, the one that answered is not") {
  Members q(3, "s3cret");
  q.servers[1].freeze();
  q.servers[2].freeze();
  auto r = on(q, {"--timeout", "2s", "lock", "P", "--owner", "a"});
  q.servers[1].thaw();
  q.servers[2].thaw();
  INFO(r.err);
  CHECK(r.status == 69);
  CHECK(one_line(r.err));
  for (int i : {1, 2}) {
    CHECK(r.err.find("127.0.0.1:" + std::to_string(q.servers[i].port()) +
                     ": did not answer AUTH or SELECT in time") != std::string::npos);
  }
  CHECK(r.err.find("127.0.0.1:" + std::to_string(q.servers[0].port())) == std::string::npos);
  CHECK(q.servers[0].cmd_int({"EXISTS", lock_key("P")}) == 0);  // nothing taken on a minority
}

// AUTH and SELECT are answered before a request goes out: a request behind a SELECT that
// every member refuses would run in database 0.
TEST_CASE("quorum: a database the members refuse is 69 and writes nothing to database 0") {
  Members q;
  auto r = rlock_raw({"--url", q.url() + "/16", "lock", "D", "--owner", "a", "--lease", "50s"}, {});
  INFO(r.err);
  CHECK(r.status == 69);
  CHECK(one_line(r.err));
  CHECK(r.err.find("DB index is out of range") != std::string::npos);
  for (const auto& s : q.servers) CHECK(s.cmd_int({"DBSIZE"}) == 0);
}

// The restart rule's keys (rlock:quorum:*, outside every prefix) and INFO are what a quorum
// needs beyond rlock(1)'s ACL: without them a lock is refused as the ACL's doing (77, the
// right named), not as members too young to count, and no member keeps a grant.
TEST_CASE("quorum: an ACL user without the restart rule's rights is 77 naming the right") {
  Members q;
  auto set_user = [&](const std::string& rules) {
    std::istringstream words(rules);
    std::vector<std::string> cmd = {"ACL", "SETUSER"};
    for (std::string w; words >> w;) cmd.push_back(w);
    for (const auto& s : q.servers) s.cmd(cmd);
  };
  const std::string documented = documented_acl_user().substr(std::string("user ").size());
  std::string url = q.url();
  url.replace(0, std::string("redis-quorum://").size(), "redis-quorum://rl:rlpw@");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--url", url});
    return rlock_raw(args, {});
  };
  auto refused = [&](const RunResult& r, const std::string& right, const std::string& name) {
    INFO("stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.status == 77);
    CHECK(one_line(r.err));
    CHECK(r.err.find("NOPERM " + right) != std::string::npos);
    CHECK(q.holding(name, "a") == 0);
  };
  q.cache_lock_scripts();  // a late member's grant would come after the check below

  set_user(documented);  // no +info
  refused(run({"lock", "A", "--owner", "a"}), "rlock needs INFO", "A");
  refused(run({"exec", "--owner", "a", "A", "--", "true"}), "rlock needs INFO", "A");

  set_user("rl +info resetkeys ~app:* resetchannels &app:*");  // another prefix only
  auto r = run({"--prefix", "app:", "lock", "A", "--owner", "a"});
  refused(r, "", "A");  // Redis's own refusal of the script's keys, named by rlock
  CHECK(r.err.find("rlock:quorum:*") != std::string::npos);

  set_user("rl ~rlock:quorum:*");
  r = run({"--prefix", "app:", "lock", "A", "--owner", "a"});
  INFO(r.err);
  CHECK(r.status == 0);
  for (const auto& s : q.servers) CHECK(s.cmd_int({"DBSIZE"}) > 0);
  CHECK(run({"--prefix", "app:", "unlock", "A", "--owner", "a"}).status == 0);
}

// `owner` holds `name` on every member (rlock returns at a majority: a late member's grant,
// if it ran after a test's DEL, would put its hold back).
void hold_everywhere(const Members& q, const std::string& name, const std::string& owner) {
  q.cache_lock_scripts();
  REQUIRE(on(q, {"lock", name, "--owner", owner}).status == 0);
  REQUIRE(poll_until([&] { return q.holding(name, owner) == 3; }, 5s));
}

TEST_CASE("quorum: inspect lists each member's view and whether a majority agrees") {
  Members q;
  hold_everywhere(q, "I", "alice");
  q.servers[2].cmd({"DEL", lock_key("I")});
  auto listing = [&] {
    auto r = on(q, {"inspect", "I"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::vector<std::string> out;
    const json listed = parse_json(r.out);
    for (const auto& o : listed) {
      out.push_back(o.at("member").get<std::string>() + " " +
                    o.at("holders")[0].at("owner").get<std::string>() +
                    (o.at("majority").get<bool>() ? " majority" : " minority"));
    }
    return out;
  };
  const std::string x = "127.0.0.1:" + std::to_string(q.servers[0].port());
  const std::string y = "127.0.0.1:" + std::to_string(q.servers[1].port());
  CHECK(listing() == std::vector<std::string>{x + " alice majority", y + " alice majority"});
  // The table says the same in its last column, MEMBER: no row reads as a second holder.
  auto table = on(q, {"--format", "table", "inspect", "I"});
  REQUIRE(table.status == 0);
  std::istringstream lines(table.out);
  std::vector<std::string> ends;
  for (std::string line; std::getline(lines, line);)
    ends.push_back(line.substr(line.rfind("  ") + 2));
  CHECK(ends == std::vector<std::string>{"MEMBER", x + " majority", y + " majority"});
  q.servers[1].cmd({"DEL", lock_key("I")});
  CHECK(listing() == std::vector<std::string>{x + " alice minority"});
}

// A quorum outlives a member, and so does inspect: the members that answer are listed, the
// one that does not is named on stderr and agrees with nobody (a lock two members hold is a
// majority, one that only the answering member lacks is not "nobody" by a majority).
TEST_CASE("quorum: inspect lists the members that answer and names one that does not") {
  Members q;
  hold_everywhere(q, "I", "alice");
  q.servers[1].cmd({"DEL", lock_key("I")});
  const std::string down = "127.0.0.1:" + std::to_string(q.servers[2].port());
  q.servers[2].stop();
  auto r = on(q, {"inspect", "I"});
  INFO("stdout: " << r.out << " stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("inspect lists 2 of the 3 quorum members") != std::string::npos);
  CHECK(r.err.find(down) != std::string::npos);
  const json listed = parse_json(r.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].at("member") == "127.0.0.1:" + std::to_string(q.servers[0].port()));
  CHECK(listed[0].at("majority") == false);  // alice on 1 of 3, nobody on 1, one unknown
  q.servers[1].freeze();
  r = on(q, {"inspect", "I", "--timeout", "500ms"});
  CHECK(r.status == 69);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("fewer than a majority of the 3 quorum members answered") != std::string::npos);
  q.servers[1].thaw();
}

// Members are looked at one by one, but asked whether they answer all at once: two frozen
// members cost one --timeout, not one each.
TEST_CASE("quorum: inspect and doctor wait one --timeout for two frozen members, not two") {
  Members q(5);
  q.cache_lock_scripts();
  REQUIRE(on(q, {"lock", "I", "--owner", "alice"}).status == 0);
  REQUIRE(poll_until([&] { return q.holding("I", "alice") == 5; }, 5s));
  q.servers[1].freeze();
  q.servers[3].freeze();
  const auto start = Clock::now();
  auto r = on(q, {"--timeout", "2s", "inspect", "I"});
  const auto inspect_ms = ms_between(start);
  INFO("inspect: " << r.err);
  CHECK(r.status == 0);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("inspect lists 3 of the 5 quorum members") != std::string::npos);
  CHECK(parse_json(r.out).size() == 3);
  CHECK(inspect_ms < 3500);
  const auto doctor_start = Clock::now();
  auto d = on(q, {"--timeout", "2s", "doctor"});
  const auto doctor_ms = ms_between(doctor_start);
  INFO("doctor: " << d.out << d.err);
  CHECK(d.status == 1);
  int unreachable = 0;
  const json doc = parse_json(d.out);
  for (const auto& f : doc.at("findings"))
    unreachable += f.at("check") == "reachable" && f.at("level") == "fail";
  CHECK(unreachable == 2);
  CHECK(doctor_ms < 3500);
  q.servers[1].thaw();
  q.servers[3].thaw();
}

}  // namespace
}  // namespace rlock::test
