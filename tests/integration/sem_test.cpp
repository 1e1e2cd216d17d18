// `rlock sem`: permits with leases, stored capacity, FIFO handoff, exec supervision, and
// bad input that changes nothing.
#include <doctest/doctest.h>

#include <csignal>
#include <map>

#include "harness.hpp"
#include "lib_util.hpp"

namespace rlock::test {
namespace {

std::string sem_key(const std::string& name) { return "rlock:sem:{" + name + "}"; }

json sem_ok(const RedisServer& redis, const std::vector<std::string>& args) {
  auto r = rlock(redis, args);
  INFO("args: " << json(args).dump() << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  return parse_json(r.out);
}

// Takes `count` permits of `name` (capacity `permits`), returns their ids.
std::vector<std::string> take(const RedisServer& redis, const std::string& name, int permits,
                              int count = 1, const std::string& lease = "30s") {
  auto j = sem_ok(redis, {"sem", "acquire", name, "--permits", std::to_string(permits), "--count",
                          std::to_string(count), "--lease", lease, "--owner", "t"});
  REQUIRE(j.at("acquired") == true);
  return j.at("permits").get<std::vector<std::string>>();
}

json status(const RedisServer& redis, const std::string& name) {
  return sem_ok(redis, {"sem", "status", name});
}

// 16 processes x `rounds` `sem exec` of a probe that counts who is inside (under flock)
// and records any moment with more than `permits` inside.
void run_probe(int permits, int rounds) {
  RedisServer redis;
  TempDir dir;
  write_file(dir / "in", "0\n");
  write_file(dir / "max", "0\n");
  write_file(dir / "done", "");
  write_file(dir / "over", "");
  write_file(dir / "probe",
             "#!/bin/sh\n"
             "exec 9>\"$D/lk\"\n"
             "flock 9; n=$(($(cat \"$D/in\") + 1)); echo $n > \"$D/in\"\n"
             "[ $n -gt $P ] && echo $n >> \"$D/over\"\n"
             "[ $n -gt $(cat \"$D/max\") ] && echo $n > \"$D/max\"\n"
             "flock -u 9; sleep 0.002\n"
             "flock 9; echo $(($(cat \"$D/in\") - 1)) > \"$D/in\"; echo x >> \"$D/done\"\n",
             0755);
  const std::string loop = "for i in $(seq " + std::to_string(rounds) +
                           "); do \"$RL\" --url \"$URL\" sem exec --permits $P --wait 100s S -- "
                           "\"$D/probe\" || exit 1; done";
  const Env env{{"RL", rlock_binary()},
                {"URL", redis.topology_url()},
                {"D", dir.path().string()},
                {"P", std::to_string(permits)}};
  std::vector<Spawned> loops;
  auto start = Clock::now();
  for (int i = 0; i < 16; ++i) loops.emplace_back(std::vector<std::string>{"sh", "-c", loop}, env);
  const auto until = deadline(110s);
  for (auto& proc : loops) {
    auto s = proc.wait(until);
    INFO("stderr: " << proc.err());
    REQUIRE(s.has_value());
    CHECK(*s == 0);
  }
  MESSAGE("permits " << permits << ": 16 x " << rounds << " sem exec took " << ms_between(start)
                     << " ms");
  CHECK(read_file(dir / "over") == "");
  CHECK(line_count(read_file(dir / "done")) == 16 * rounds);
  CHECK(read_file(dir / "in") == "0\n");
  if (permits > 1) CHECK(std::stoi(read_file(dir / "max")) >= 2);  // they did overlap
  CHECK(redis.cmd_int({"ZCARD", sem_key("S")}) == 0);
}

TEST_CASE("sem exec: 16 processes x 50 runs never have more than P inside, none lost") {
  SUBCASE("permits 1") { run_probe(1, 50); }
  SUBCASE("permits 3") { run_probe(3, 50); }
}

TEST_CASE("sem: acquire, status, release print the documented JSON; double release credits once") {
  RedisServer redis;
  auto ids = take(redis, "S", 2);
  REQUIRE(ids.size() == 1);
  auto s = status(redis, "S");
  CHECK(s.at("capacity") == 2);
  CHECK(s.at("in_use") == 1);
  CHECK(s.at("free") == 1);
  CHECK(s.at("permits")[0].at("owner") == "t");
  CHECK(s.at("permits")[0].at("lease_ms").get<long long>() > 25000);

  auto r = sem_ok(redis, {"sem", "release", "S", "--permit", ids[0]});
  CHECK(r == json::object({{"name", "S"}, {"released", 1}, {"not_held", json::array()}}));
  auto again = rlock(redis, {"sem", "release", "S", "--permit", ids[0]});
  CHECK(again.status == 75);
  CHECK(line_count(again.err) == 1);
  CHECK(status(redis, "S").at("free") == 2);
  // Credited once: still only 2 permits to take.
  take(redis, "S", 2, 2);
  CHECK(rlock(redis, {"sem", "acquire", "S", "--permits", "2"}).status == 75);
  CHECK(rlock(redis, {"sem", "acquire", "S", "--permits", "2", "-E", "9"}).status == 9);

  auto forced = sem_ok(redis, {"sem", "release", "--force", "S"});
  CHECK(forced.at("permits").size() == 2);
  CHECK(status(redis, "S").at("in_use") == 0);
}

TEST_CASE("sem: a forged, unknown or expired permit id changes nothing") {
  RedisServer redis;
  auto ids = take(redis, "S", 2);
  auto before = snapshot(redis);
  for (const std::string& id : {std::string("forged.1"), ids[0] + "x", std::string("")}) {
    auto r = rlock(redis, {"sem", "release", "S", "--permit", id});
    INFO("id: " << id << " stderr: " << r.err);
    CHECK((r.status == 75 || r.status == 64));
    CHECK(line_count(r.err) == 1);
    auto n = rlock(redis, {"sem", "renew", "S", "--permit", id});
    CHECK((n.status == 75 || n.status == 64));
  }
  CHECK(snapshot(redis) == before);
}

TEST_CASE("sem: renewing an expired permit fails and never re-acquires it") {
  RedisServer redis;
  auto ids = take(redis, "S", 1, 1, "200ms");
  REQUIRE(poll_until([&] { return status(redis, "S").at("in_use") == 0; }, 5s));
  auto r = rlock(redis, {"sem", "renew", "S", "--permit", ids[0]});
  CHECK(r.status == 75);
  CHECK(line_count(r.err) == 1);
  CHECK(redis.cmd_int({"ZCARD", sem_key("S")}) == 0);
  // A live one renews.
  ids = take(redis, "S", 1, 1, "5s");
  auto ok = sem_ok(redis, {"sem", "renew", "S", "--permit", ids[0], "--lease", "1m"});
  CHECK(ok.at("renewed") == true);
  CHECK(status(redis, "S").at("permits")[0].at("lease_ms").get<long long>() > 50000);
}

TEST_CASE("sem exec: a permit lost while the job runs stops the job, exit 76") {
  RedisServer redis;
  auto job =
      spawn_rlock(redis, {"sem", "exec", "--permits", "1", "--lease", "3s", "--kill-after", "500ms",
                          "S", "--", "sh", "-c", "echo $RLOCK_PERMITS; exec sleep 60"});
  auto line = job.read_line(deadline(10s));
  INFO("stderr: " << job.err());
  REQUIRE(line.has_value());
  CHECK(line->find('.') != std::string::npos);
  sem_ok(redis, {"sem", "release", "--force", "S"});
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 76);
}

TEST_CASE("sem: a SIGKILLed holder's permits come back within lease + 1s") {
  RedisServer redis;
  auto holder =
      spawn_rlock(redis, {"sem", "exec", "--permits", "1", "--lease", "2s", "--kill-after", "500ms",
                          "K", "--", "sh", "-c", "echo $$; exec sleep 60"});
  auto line = holder.read_line(deadline(10s));
  REQUIRE(line.has_value());
  PidGuard job(static_cast<pid_t>(std::stol(*line)));
  holder.kill(SIGKILL);
  auto killed = Clock::now();
  auto r = rlock(redis, {"sem", "acquire", "K", "--permits", "1", "--wait", "10s"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(ms_between(killed) <= 3000);
  CHECK(job.wait_gone(5s));
}

TEST_CASE("sem: another --permits is refused unless --resize; a shrink waits for releases") {
  RedisServer redis;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(take(redis, "S", 3)[0]);
  auto before = snapshot(redis);
  auto r = rlock(redis, {"sem", "acquire", "S", "--permits", "2"});
  CHECK(r.status == 65);
  CHECK(r.err.find("capacity 3") != std::string::npos);
  CHECK(r.err.find("--permits 2") != std::string::npos);
  CHECK(snapshot(redis) == before);

  r = rlock(redis, {"sem", "acquire", "S", "--permits", "2", "--resize"});
  CHECK(r.status == 75);
  CHECK(status(redis, "S").at("capacity") == 2);
  sem_ok(redis, {"sem", "release", "S", "--permit", ids[0]});
  CHECK(rlock(redis, {"sem", "acquire", "S", "--permits", "2"}).status == 75);  // 2 in use
  sem_ok(redis, {"sem", "release", "S", "--permit", ids[1]});
  take(redis, "S", 2);  // 1 in use < 2
  CHECK(rlock(redis, {"sem", "acquire", "S", "--permits", "2"}).status == 75);

  // Grow: room at once.
  CHECK(rlock(redis, {"sem", "acquire", "S", "--permits", "4"}).status == 65);
  auto grown = sem_ok(redis, {"sem", "acquire", "S", "--permits", "4", "--resize", "--count", "2"});
  CHECK(grown.at("acquired") == true);
  CHECK(status(redis, "S").at("capacity") == 4);
  CHECK(status(redis, "S").at("in_use") == 4);
}

// A resize is an administrative act: waiters let in under the old capacity keep their
// place and their grants, whatever --permits they gave.
TEST_CASE("sem: a --resize keeps the queued and granted waiters; they get their permits") {
  RedisServer redis;
  auto held = take(redis, "R", 2, 2);
  auto waiter = [&](const std::string& owner) {
    return spawn_rlock(redis, {"sem", "acquire", "R", "--permits", "2", "--wait", "30s", "--owner",
                               owner, "--lease", "30s"});
  };
  // g is granted a permit while stopped (it cannot claim it yet); q stays queued.
  auto g = waiter("g");
  REQUIRE(poll_until([&] { return status(redis, "R").at("waiters").size() == 1; }, 10s));
  auto q = waiter("q");
  REQUIRE(poll_until([&] { return status(redis, "R").at("waiters").size() == 2; }, 10s));
  g.kill(SIGSTOP);
  sem_ok(redis, {"sem", "release", "R", "--permit", held[0]});
  REQUIRE(status(redis, "R").at("waiters").at(0).at("granted") == true);
  // Grow to 3: one more permit is free, and it goes to the queued q, not to the resizer.
  auto r = rlock(redis, {"sem", "acquire", "R", "--permits", "3", "--resize", "--owner", "admin"});
  CHECK(r.status == 75);
  g.kill(SIGCONT);
  CHECK(g.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(q.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("g: " << g.err() << "\nq: " << q.err());
  auto st = status(redis, "R");
  CHECK(st.at("capacity") == 3);
  CHECK(st.at("in_use") == 3);
  std::map<std::string, int> owners;
  for (const auto& p : st.at("permits")) ++owners[p.at("owner").get<std::string>()];
  CHECK(owners == std::map<std::string, int>{{"g", 1}, {"q", 1}, {"t", 1}});
  // A new request still names the stored capacity.
  CHECK(rlock(redis, {"sem", "acquire", "R", "--permits", "2"}).status == 65);
}

// A try after a grow gets a permit that the queued waiter does not need, and only such a
// one: permits granted and not claimed yet are in use, and a waiter that the free ones
// would serve (or that waits for more than is free) comes first.
TEST_CASE(
    "sem: a -n after a --resize takes a free permit no queued waiter needs, never one ahead") {
  struct Case {
    int waiter_count;
    int grown_to;
    int status;      // of the admin's `-n`
    int in_use;      // its busy reply (granted, not yet claimed, included)
    int admin_held;  // permits the admin holds at the end
  };
  const Case cases[] = {
      {1, 5, 0, 0, 1},   // 2 free: 1 for the waiter, 1 left over
      {2, 5, 75, 5, 0},  // 2 free: both for the waiter
      {2, 4, 75, 3, 0},  // 1 free: the waiter at the head needs 2
  };
  for (const auto& c : cases) {
    CAPTURE(c.waiter_count);
    CAPTURE(c.grown_to);
    RedisServer redis;
    take(redis, "S1", 3, 3);
    auto w = spawn_rlock(redis, {"sem", "acquire", "S1", "--permits", "3", "--count",
                                 std::to_string(c.waiter_count), "--wait", "30s", "--owner", "w"});
    REQUIRE(poll_until([&] { return status(redis, "S1").at("waiters_total") == 1; }, 10s));
    auto r = rlock(redis, {"sem", "acquire", "S1", "--permits", std::to_string(c.grown_to),
                           "--resize", "-n", "--owner", "admin"});
    INFO("stderr: " << r.err);
    REQUIRE(r.status == c.status);
    if (c.status == 75) CHECK(parse_json(r.out).at("in_use") == c.in_use);
    if (c.grown_to - 3 >= c.waiter_count) {
      CHECK(w.wait(deadline(10s)).value_or(kStillRunning) == 0);
    } else {
      CHECK(status(redis, "S1").at("waiters_total") == 1);
    }
    auto st = status(redis, "S1");
    int admin = 0;
    for (const auto& p : st.at("permits")) admin += p.at("owner") == "admin";
    CHECK(admin == c.admin_held);
  }
}

// A waiter asking for more permits than a shrink left can never be served: it is told so
// (65, one line) instead of holding up the queue.
TEST_CASE("sem: a --resize below a queued request's count ends that wait with one line, 65") {
  RedisServer redis;
  auto held = take(redis, "K", 3, 1);
  auto big = spawn_rlock(redis, {"sem", "acquire", "K", "--permits", "3", "--count", "3", "--wait",
                                 "30s", "--owner", "big"});
  REQUIRE(poll_until([&] { return status(redis, "K").at("waiters").size() == 1; }, 10s));
  auto small = spawn_rlock(
      redis, {"sem", "acquire", "K", "--permits", "3", "--wait", "30s", "--owner", "small"});
  REQUIRE(poll_until([&] { return status(redis, "K").at("waiters").size() == 2; }, 10s));
  CHECK(rlock(redis, {"sem", "acquire", "K", "--permits", "2", "--resize"}).status == 75);
  sem_ok(redis, {"sem", "release", "K", "--permit", held[0]});
  CHECK(big.wait(deadline(10s)).value_or(kStillRunning) == 65);
  CHECK(line_count(big.err()) == 1);
  CHECK(big.err().find("resized to capacity 2") != std::string::npos);
  CHECK(small.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("sem: waiters are served in arrival order; a big request at the head is not starved") {
  RedisServer redis;
  TempDir dir;
  auto held = take(redis, "F", 1);
  std::vector<Spawned> waiters;
  for (int i = 0; i < 5; ++i) {
    waiters.push_back(spawn_rlock(redis,
                                  {"sem", "exec", "--permits", "1", "--wait", "30s", "F", "--",
                                   "sh", "-c", "echo " + std::to_string(i) + " >> \"$O\""},
                                  {{"O", dir / "order"}}));
    REQUIRE(
        poll_until([&] { return status(redis, "F").at("waiters").size() == size_t(i + 1); }, 10s));
  }
  sem_ok(redis, {"sem", "release", "F", "--permit", held[0]});
  for (auto& w : waiters) CHECK(w.wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(read_file(dir / "order") == "0\n1\n2\n3\n4\n");

  // Capacity 3, 2 held: a request for 2 waits, and a later request for 1 queues behind it.
  auto two = take(redis, "B", 3, 2);
  auto big = spawn_rlock(redis, {"sem", "acquire", "B", "--permits", "3", "--count", "2", "--wait",
                                 "30s", "--owner", "big"});
  REQUIRE(poll_until([&] { return status(redis, "B").at("waiters").size() == 1; }, 10s));
  auto small = spawn_rlock(
      redis, {"sem", "acquire", "B", "--permits", "3", "--wait", "30s", "--owner", "small"});
  REQUIRE(poll_until([&] { return status(redis, "B").at("waiters").size() == 2; }, 10s));
  CHECK(status(redis, "B").at("in_use") == 2);
  CHECK(small.running());
  sem_ok(redis, {"sem", "release", "B", "--permit", two[0], "--permit", two[1]});
  CHECK(big.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(small.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(status(redis, "B").at("in_use") == 3);
}

TEST_CASE("sem: a SIGKILLed waiter is skipped, a SIGSTOPped one holds the queue at most 2s") {
  RedisServer redis;
  TempDir dir;
  auto held = take(redis, "Q", 1);
  std::vector<Spawned> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.push_back(spawn_rlock(redis,
                                  {"sem", "exec", "--permits", "1", "--wait", "30s", "Q", "--",
                                   "sh", "-c", "echo " + std::to_string(i) + " >> \"$O\""},
                                  {{"O", dir / "order"}}));
    REQUIRE(
        poll_until([&] { return status(redis, "Q").at("waiters").size() == size_t(i + 1); }, 10s));
  }
  waiters[0].kill(SIGSTOP);  // the head: granted, never claims
  waiters[1].kill(SIGKILL);  // the middle: gone
  REQUIRE(waiters[1].wait(deadline(5s)).has_value());
  auto released = Clock::now();
  sem_ok(redis, {"sem", "release", "Q", "--permit", held[0]});
  CHECK(waiters[2].wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(ms_between(released) < 2000 + 1500);
  CHECK(read_file(dir / "order") == "2\n");
  waiters[0].kill(SIGCONT);  // comes back, queues again, and runs
  CHECK(waiters[0].wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(read_file(dir / "order") == "2\n0\n");
  CHECK(status(redis, "Q").at("in_use") == 0);
}

TEST_CASE("sem: bad input is one line on stderr, the documented code, and changes nothing") {
  RedisServer redis;
  take(redis, "S", 3);
  rlock(redis, {"lock", "L", "--owner", "o"});
  rlock(redis, {"lock", "--shared", "R", "--owner", "r"});  // a lock held shared only
  redis.cmd({"SET", sem_key("T"), "a string"});
  // A capacity no rlock stores (beyond 15 digits): malformed, never wrapped.
  redis.cmd({"HSET", sem_key("H") + ":cfg", "capacity", "99999999999999999999999"});
  redis.cmd({"ZADD", sem_key("H"), "99999999999999", "p.1"});
  auto before = snapshot(redis);
  struct Case {
    std::vector<std::string> args;
    int status;
  };
  const Case cases[] = {
      {{"sem", "acquire", "S", "--permits", "3", "--count", "0"}, 64},
      {{"sem", "acquire", "S", "--permits", "3", "--count", "-1"}, 64},
      {{"sem", "acquire", "S", "--permits", "3", "--count", "4"}, 64},
      {{"sem", "acquire", "S", "--permits", "0"}, 64},
      {{"sem", "acquire", "S", "--permits", "-2"}, 64},
      {{"sem", "acquire", "S"}, 64},
      {{"sem", "acquire", "S", "--permits", "5"}, 65},
      {{"sem", "exec", "S", "--permits", "5", "--", "true"}, 65},
      {{"sem", "exec", "S", "--permits", "3"}, 64},
      {{"sem", "release", "S"}, 64},
      {{"sem", "release", "S", "--permit", "nope.1"}, 75},
      {{"sem", "renew", "S", "--permit", "nope.1"}, 75},
      {{"sem", "acquire", "L", "--permits", "1"}, 65},  // a lock's name
      {{"sem", "status", "L"}, 65},
      {{"sem", "release", "--force", "L"}, 65},
      {{"sem", "acquire", "R", "--permits", "1"}, 65},  // a lock's name, held shared
      {{"sem", "exec", "R", "--permits", "1", "--", "true"}, 65},
      {{"lock", "S", "--owner", "o"}, 65},  // a semaphore's name
      {{"exec", "S", "--", "true"}, 65},
      {{"unlock", "--force", "S"}, 65},
      {{"sem", "acquire", "T", "--permits", "1"}, 65},  // a key of another type
      {{"sem", "status", "T"}, 65},
      {{"sem", "status", "H"}, 65},
      {{"sem", "acquire", "H", "--permits", "3"}, 65},
      {{"sem", "acquire", "H", "--permits", "3", "--resize"}, 65},
      {{"sem", "release", "H", "--permit", "p.1"}, 65},
      {{"sem", "acquire", "S", "--permits", "99999999999999999999999"}, 64},
      {{"sem", "acquire", "S", "--permits", "0x3"}, 64},  // not hex, nor a sign
      {{"sem", "acquire", "S", "--permits", "+3"}, 64},
      {{"sem", "acquire", "S", "--permits", "3", "--count", "99999999999999999999999"}, 64},
      {{"sem", "status", "S", "--limit", "99999999999999999999999"}, 64},
      {{"sem", "bogus", "S"}, 64},
      {{"sem"}, 64},
  };
  for (const auto& c : cases) {
    auto r = rlock(redis, c.args);
    INFO("args: " << json(c.args).dump() << "\nstderr: " << r.err);
    CHECK(r.status == c.status);
    CHECK(line_count(r.err) == 1);
    CHECK(r.out == "");
  }
  CHECK(snapshot(redis) == before);
}

}  // namespace
}  // namespace rlock::test

namespace rlock::test {
namespace {

TEST_CASE("sem: a name that starts with '-' comes after `--` (sem exec: `-- -NAME -- CMD`)") {
  RedisServer redis;
  auto r = rlock(redis, {"sem", "exec", "--permits", "1", "--", "-n", "--", "echo", "ran"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "ran\n");
  auto taken = sem_ok(redis, {"sem", "acquire", "--permits", "1", "--", "-n"});
  CHECK(taken.at("name") == "-n");
  CHECK(sem_ok(redis, {"sem", "status", "--", "-n"}).at("in_use") == 1);
  CHECK(rlock(redis, {"sem", "acquire", "x", "--permits", "1", "--", "cmd"}).status == 64);
}

// A freed permit goes to the head; of the rest of the queue only the waiter next in line
// hears from it (to look again when the grant's claim window ends, in case the head never
// claims): the cost of a release does not grow with the queue.
TEST_CASE("sem: a hand-off wakes the head and the next waiter, not the whole queue") {
  RedisServer redis;
  auto held = take(redis, "W", 1);
  std::vector<Spawned> waiters;
  for (int i = 0; i < 10; ++i) {
    waiters.push_back(spawn_rlock(redis, {"sem", "acquire", "W", "--permits", "1", "--wait", "60s",
                                          "--owner", "w" + std::to_string(i)}));
  }
  REQUIRE(poll_until([&] { return status(redis, "W").at("waiters").size() == 10; }, 10s));
  const std::string channel = "rlock:chan:{W}:sem";
  const auto grants = grant_channels(redis, sem_key("W") + ":waiters", channel, 1);
  REQUIRE(grants.size() == 10);
  auto channels = grants;
  channels.push_back(channel);
  const Heard heard = heard_during_paused(
      redis, channels, waiters,
      [&] {
        sem_ok(redis, {"sem", "release", "W", "--permit", held[0]});
      },
      [&](const RedisServer& m) {
        return m.cmd_str({"ZSCORE", sem_key("W"), held[0]}).empty();
      });
  CHECK(heard == Heard{{grants[0], {"grant"}}, {grants[1], {"changed 2000"}}});
}

}  // namespace
}  // namespace rlock::test
