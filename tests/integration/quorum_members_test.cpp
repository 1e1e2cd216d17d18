// A quorum's members as servers: one restarted empty (the restart rule), passwords,
// databases and ACLs on every member, and what inspect and doctor show of each.
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
