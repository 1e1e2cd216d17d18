// Locks on a quorum of independent masters (redis-quorum://): majority, validity, the fence
// written back, members frozen and killed, exec losing its majority, waiters woken through
// any member, and the primitives that refuse a quorum (quorum_members_test.cpp: restarts,
// credentials, inspect and doctor).
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "documented_acl.hpp"
#include "harness.hpp"
#include "quorum_helpers.hpp"
#include "redis/script.hpp"

namespace rlock::test {
namespace {

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

}  // namespace
}  // namespace rlock::test
