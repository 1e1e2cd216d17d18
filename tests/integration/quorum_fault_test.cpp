// A quorum (redis-quorum://) under the faults of one server's requests: replies lost with a
// dropped connection, requests lost before a member saw them, dead flows, and a member that
// lost its scripts answering after the majority. Every member runs every request once, and
// what rlock reports is what the members did. (The faults of a whole deployment, of rlock
// itself and of its job run on a quorum too: RLOCK_TEST_TOPOLOGY=quorum, tests/CMakeLists.)
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <thread>

#include "harness.hpp"
#include "lossy_proxy.hpp"

namespace rlock::test {
namespace {

using Loss = LossyProxy::Loss;

// Three independent members, each behind a proxy that loses requests or replies on demand.
struct LossyQuorum {
  LossyQuorum() {
    for (int i = 0; i < 3; ++i) {
      servers.emplace_back(RedisOptions{.test_topology = false});
      proxies.push_back(std::make_unique<LossyProxy>(servers.back().port()));
    }
  }
  std::string url() const {
    std::string out = "redis-quorum://";
    for (size_t i = 0; i < proxies.size(); ++i)
      out += (i ? "," : "") + proxies[i]->url().substr(std::string("redis://").size());
    return out;
  }
  // The next request with `marker` suffers `loss` on each of `members`.
  void lose(const std::string& marker, Loss loss, std::vector<size_t> members) {
    for (size_t i : members) proxies[i]->lose(marker, loss);
  }
  int losses(size_t member) const { return proxies[member]->losses(); }
  // The reentry count of `owner` in lock `name` on each member ("" where it holds nothing).
  std::vector<std::string> counts(const std::string& name, const std::string& owner) const {
    std::vector<std::string> out;
    for (const auto& s : servers) out.push_back(s.cmd_str({"HGET", lock_key(name), owner}));
    return out;
  }
  std::vector<RedisServer> servers;
  std::vector<std::unique_ptr<LossyProxy>> proxies;
};

RunResult on(const LossyQuorum& q, std::vector<std::string> args) {
  args.insert(args.begin(), {"--url", q.url()});
  return rlock_raw(args);
}

// The scripts are cached on every member first, so that the request a test loses is the
// script itself (an EVALSHA answered NOSCRIPT would be sent again anyway).
void warm_up(const LossyQuorum& q) {
  REQUIRE(on(q, {"lock", "w", "--owner", "a"}).status == 0);
  REQUIRE(on(q, {"unlock", "w", "--owner", "a"}).status == 0);
}

const std::vector<std::string> kOnce = {"1", "1", "1"};
const std::vector<std::string> kNowhere = {"", "", ""};

bool one_line(const std::string& err) { return !err.empty() && err.find('\n') == err.size() - 1; }

// The bytes of a token's write-back for lock `name` (lua/lock_fence_raise.lua's KEYS, the
// token then the lock hash, adjacent in no other request).
std::string write_back_marker(const std::string& name) {
  const std::string lock = lock_key(name);
  return fence_key(name) + "\r\n$" + std::to_string(lock.size()) + "\r\n" + lock + "\r\n";
}

// CLIENT PAUSE on every member (its own connection): the requests wait `ms` there.
void pause_members(const LossyQuorum& q, int ms) {
  for (const auto& s : q.servers) s.cmd({"CLIENT", "PAUSE", std::to_string(ms), "ALL"});
}

TEST_CASE("quorum lost reply: lock and unlock lost on a majority are sent again, run once") {
  LossyQuorum q;
  warm_up(q);

  // Granted on all three, two replies lost: sent again to those two, which report the
  // grant they made (a re-entry would make the count 2 there). Each proxy forwards the
  // request before it drops the reply, so every member runs it; but a member the majority
  // did without may answer after rlock exited, and its proxy, which saw the client leave
  // first, has no reply to drop (under two busy loops 4 of 15 runs missed a loss that way,
  // the build before 7 of 15). rlock needed at least one of the two.
  q.lose("{L}", Loss::kReply, {0, 1});
  auto r = on(q, {"lock", "L", "--owner", "a", "--lease", "30s"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  auto j = parse_json(r.out);
  CHECK(j.at("acquired") == true);
  CHECK(j.at("count") == 1);
  CHECK(poll_until([&] { return q.counts("L", "a") == kOnce; }, 5s));
  CHECK(q.losses(0) + q.losses(1) >= 1);
  CHECK(std::max(q.losses(0), q.losses(1)) == 1);

  // The release's replies lost on two members: it ran there once, and says released.
  const int losses_1 = q.losses(1), lost_before = losses_1 + q.losses(2);
  q.lose("{L}", Loss::kReply, {1, 2});
  auto u = on(q, {"unlock", "L", "--owner", "a"});
  INFO("stdout: " << u.out << "\nstderr: " << u.err);
  CHECK(u.status == 0);
  CHECK(q.losses(1) + q.losses(2) > lost_before);  // as above: one at least, one each at most
  CHECK(q.losses(1) - losses_1 <= 1);
  CHECK(q.losses(2) <= 1);
  CHECK(parse_json(u.out) == json{{"name", "L"}, {"owner", "a"}, {"released", true}, {"count", 0}});
  CHECK(poll_until(
      [&] {
        return std::all_of(q.servers.begin(), q.servers.end(), [](const RedisServer& s) {
          return s.cmd_int({"EXISTS", lock_key("L")}) == 0;
        });
      },
      5s));

  // Requests lost before two members saw them run once on a majority, on the repeat. A
  // member the majority did without may see its loss after rlock exited, and then nothing
  // more: a grant is not sent again once a majority answered.
  const int losses_0 = q.losses(0), losses_2 = q.losses(2);
  q.lose("{L}", Loss::kRequest, {0, 2});
  auto r2 = on(q, {"lock", "L", "--owner", "b"});
  INFO("stdout: " << r2.out << "\nstderr: " << r2.err);
  REQUIRE(r2.status == 0);
  CHECK(parse_json(r2.out).at("count") == 1);
  CHECK(poll_until([&] { return q.losses(0) == losses_0 + 1 && q.losses(2) == losses_2 + 1; }, 5s));
  auto held_once = [&] {
    const auto c = q.counts("L", "b");
    return std::count(c.begin(), c.end(), "1") >= 2 &&
           std::count(c.begin(), c.end(), "1") + std::count(c.begin(), c.end(), "") == 3;
  };
  CHECK(poll_until(held_once, 5s));
}

TEST_CASE("quorum lost reply: replies stuck in dead flows to a majority are asked for again") {
  LossyQuorum q;
  warm_up(q);
  q.lose("{D}", Loss::kStalledReply, {0, 1});
  const auto start = Clock::now();
  auto r = on(q, {"--timeout", "3s", "lock", "D", "--owner", "a"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out).at("count") == 1);
  CHECK(q.counts("D", "a") == kOnce);
  // Asked again after half of --timeout, not at its end.
  CHECK(ms_between(start) < 2900);

  // --force's replies lost on a majority: repeated, it reports the holder it removed.
  q.lose("{D}", Loss::kReply, {0, 1});
  auto f = on(q, {"unlock", "D", "--force"});
  INFO("stdout: " << f.out << "\nstderr: " << f.err);
  CHECK(f.status == 0);
  CHECK(parse_json(f.out) == json{{"name", "D"},
                                  {"forced", true},
                                  {"holders", json::array({json{{"owner", "a"}, {"count", 1}}})}});
  CHECK(q.counts("D", "a") == kNowhere);
}

// A member that ran the first try reports, to the repeat, the lease left then: counted from
// the repeat's send, not again from the first one (that made a 3 s lease asked again at
// 1.5 s look expired: "busy", 75, for a lock nobody else held).
TEST_CASE("quorum lost reply: a grant repeated after half of --timeout keeps its validity") {
  LossyQuorum q;
  warm_up(q);
  q.lose("{V}", Loss::kStalledReply, {0, 1, 2});
  auto r = on(q, {"--timeout", "3s", "lock", "V", "--owner", "a", "--lease", "3s"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  const json out = parse_json(r.out);
  CHECK(out.at("acquired") == true);
  CHECK(q.counts("V", "a") == kOnce);
  // Taken by the first try, at the start: the lease in force is counted from there, and the
  // validity is what is left of it after the repeat (1.5 s later) and the drift.
  CHECK(out.at("lease_ms").get<long long>() >= 2900);
  CHECK(out.at("validity_ms").get<long long>() >= 1000);
  CHECK(out.at("validity_ms").get<long long>() <= 1500);
}

// A first try that the members ran late (paused 300 ms), whose replies were lost: the
// repeat reports the lease left then, and counted from the first send that was more than
// the 20 s asked for (20034 ms was seen).
TEST_CASE("quorum lost reply: a repeat of a grant run late reports no more lease than asked") {
  LossyQuorum q;
  warm_up(q);
  q.lose("{R}", Loss::kReply, {0, 1, 2});
  pause_members(q, 300);
  auto r = on(q, {"lock", "R", "--owner", "a", "--lease", "20s"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(q.losses(0) + q.losses(1) + q.losses(2) >= 2);
  const json out = parse_json(r.out);
  CHECK(out.at("lease_ms").get<long long>() <= 20000);
  CHECK(out.at("lease_ms").get<long long>() >= 19000);
  // Counted from the first send, 300 ms before the grants.
  CHECK(out.at("validity_ms").get<long long>() <= 20000 - 300);
  // Held once on a majority at least: a member whose pause ends later (Redis lifts a pause
  // at its next cron tick) may still be paused when rlock exits, and drops the request then.
  const auto c = q.counts("R", "a");
  CHECK(std::count(c.begin(), c.end(), "1") >= 2);
  CHECK(std::count(c.begin(), c.end(), "1") + std::count(c.begin(), c.end(), "") == 3);
}

// A majority granted, but the token's write-back got no confirmed reply from a majority:
// nothing is held, and that is an outage (69) that names the write-back, not a busy lock (it
// was "held by nobody", 75, and `exec -E 0` exited 0 without running the command). Members
// 0 and 1 have counters far ahead of the floor member 2 hands out, each its own, so that
// every majority disagrees on the token and writes it back, and every write-back's reply is
// lost.
TEST_CASE("quorum lost reply: a grant whose token write-back is never confirmed is 69") {
  LossyQuorum q;
  warm_up(q);
  TempDir dir;
  const std::string ran = dir / "ran";
  struct Case {
    std::string name;
    std::vector<std::string> args;
  } cases[] = {
      {"W", {"lock", "W", "--owner", "a"}},
      {"X", {"exec", "-E", "0", "X", "--", "touch", ran}},
  };
  for (const auto& c : cases) {
    q.servers[0].cmd({"SET", fence_key(c.name), "8000000000000000"});
    q.servers[1].cmd({"SET", fence_key(c.name), "7000000000000000"});
    for (auto& p : q.proxies) p->lose(write_back_marker(c.name), Loss::kReply, 3);
    const int lost_before = q.losses(0) + q.losses(1) + q.losses(2);
    auto r = on(q, c.args);
    INFO(c.args[0] << ": stdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 69);
    CHECK(r.out.empty());
    CHECK(one_line(r.err));
    CHECK(r.err.find("granted the lock, but the fencing token's write-back got no confirmed "
                     "reply from a majority") != std::string::npos);
    CHECK(r.err.find("nobody") == std::string::npos);
    CHECK(q.losses(0) + q.losses(1) + q.losses(2) >= lost_before + 2);
    // What the majority granted is given back on every member.
    CHECK(poll_until([&] { return q.counts(c.name, "a") == kNowhere; }, 5s));
    for (const auto& s : q.servers) CHECK(s.cmd_int({"EXISTS", lock_key(c.name)}) == 0);
  }
  CHECK_FALSE(std::filesystem::exists(ran));
}

// Members that answer only after the lease ran out (paused 300 ms, a 100 ms lease) granted
// nothing anyone can use: 69, saying so, not "busy" for a lock nobody holds.
TEST_CASE("quorum: a majority that grants after the lease ran out is 69, not busy") {
  LossyQuorum q;
  warm_up(q);
  pause_members(q, 300);
  auto r = on(q, {"lock", "P", "--owner", "a", "--lease", "100ms"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 69);
  CHECK(r.out.empty());
  CHECK(one_line(r.err));
  CHECK(r.err.find("granted the lock, but the members answered after the lease ran out") !=
        std::string::npos);
  CHECK(poll_until([&] { return q.counts("P", "a") == kNowhere; }, 5s));
}

TEST_CASE("quorum lost reply: exec's renewal lost on a majority is sent again; the job goes on") {
  LossyQuorum q;
  warm_up(q);
  TempDir dir;
  const std::string fifo = make_fifo(dir, "go");
  Spawned job({rlock_binary(), "--url", q.url(), "exec", "--lease", "1s", "E", "--", "sh", "-c",
               "echo running; read x < " + fifo});
  REQUIRE(job.read_line(deadline(15s)) == std::optional<std::string>("running"));
  q.lose("{E}", Loss::kReply, {0, 1});
  REQUIRE(poll_until([&] { return q.losses(0) == 1 && q.losses(1) == 1; }, 10s));
  const auto lost = Clock::now();
  // A timed check, not a synchronisation: past the 1s lease that the lost renewal would
  // have let run out, the job still runs and every member holds the lock for it.
  std::this_thread::sleep_until(lost + 1500ms);
  CHECK(job.running());
  for (const auto& s : q.servers) CHECK(s.cmd_int({"PTTL", lock_key("E")}) > 0);
  write_file(fifo, "go\n", 0600);
  CHECK(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  INFO("stderr: " << job.err());
  CHECK(job.err().empty());
  for (const auto& s : q.servers) CHECK(s.cmd_int({"EXISTS", lock_key("E")}) == 0);
}

TEST_CASE(
    "quorum: a member that lost its scripts and answers after the majority runs the release") {
  LossyQuorum q;
  warm_up(q);
  REQUIRE(on(q, {"lock", "S", "--owner", "a"}).status == 0);
  // The lock answers once a majority granted: the third member may run it a moment later
  // (CI once saw it still missing there on a loaded machine).
  REQUIRE(poll_until([&] { return q.counts("S", "a") == kOnce; }, 5s));
  // Member 2 forgot its scripts and answers 250ms late, long after the two others released
  // (the commands of a client that disconnects under CLIENT PAUSE are dropped).
  q.servers[2].cmd({"SCRIPT", "FLUSH"});
  q.servers[2].cmd({"CLIENT", "PAUSE", "250", "ALL"});
  auto u = on(q, {"unlock", "S", "--owner", "a"});
  INFO("stdout: " << u.out << "\nstderr: " << u.err);
  CHECK(u.status == 0);
  CHECK(parse_json(u.out).at("released") == true);
  CHECK(poll_until([&] { return q.servers[2].cmd_int({"EXISTS", lock_key("S")}) == 0; }, 5s));
  CHECK(q.counts("S", "a") == kNowhere);
}

TEST_CASE("quorum: a member that lost its scripts and is frozen past the release's end runs it") {
  LossyQuorum q;
  warm_up(q);
  REQUIRE(on(q, {"lock", "T", "--owner", "a"}).status == 0);
  // A release that this process cannot wait for: it reaches member 2 with the script's
  // source (a NOSCRIPT answered after the process ended would leave the hold there).
  q.servers[2].cmd({"SCRIPT", "FLUSH"});
  q.servers[2].freeze();
  auto start = Clock::now();
  auto u = on(q, {"unlock", "T", "--owner", "a"});
  const long long took = ms_between(start);
  q.servers[2].thaw();
  INFO("stdout: " << u.out << "\nstderr: " << u.err);
  CHECK(u.status == 0);
  CHECK(parse_json(u.out).at("released") == true);
  CHECK(took < 1500);  // the release's patience for a member after the majority, not --timeout
  CHECK(poll_until([&] { return q.servers[2].cmd_int({"EXISTS", lock_key("T")}) == 0; }, 5s));
  CHECK(q.counts("T", "a") == kNowhere);
}

}  // namespace
}  // namespace rlock::test
