// exec --once-per: one run per schedule slot of the server's clock across all hosts, each
// run recorded in the name's run history (rlock:runs:{NAME}), which inspect shows after the
// lock is gone. Slots are placed around the server's time now (an offset computed from
// TIME), so that no test runs near a slot's edge by chance. Not on a quorum (refused there:
// the history is one server's list).
#include <doctest/doctest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include "harness.hpp"

namespace rlock::test {
namespace {

constexpr long long kHour = 3600LL * 1000;
constexpr long long kDay = 24 * kHour;

long long server_ms(const RedisServer& redis) {
  auto t = redis.cmd({"TIME"});
  return std::stoll(t.at(0)) * 1000 + std::stoll(t.at(1)) / 1000;
}

// --slot-offset (ms) that puts the server's time now `into` ms after the start of a slot of
// `every` ms.
std::string offset_for(const RedisServer& redis, long long every, long long into) {
  long long offset = ((server_ms(redis) - into) % every + every) % every;
  return std::to_string(offset) + "ms";
}

std::string runs_key(const std::string& name) { return "rlock:runs:{" + name + "}"; }

std::vector<json> records(const RedisServer& redis, const std::string& name) {
  std::vector<json> out;
  for (const auto& r : redis.cmd({"LRANGE", runs_key(name), "0", "-1"}))
    out.push_back(parse_json(r));
  return out;
}

json inspected_runs(const RedisServer& redis, const std::string& name,
                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"inspect", "--type", "runs", name};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = rlock(redis, args);
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto all = parse_json(r.out);
  REQUIRE(all.size() == 1);
  return all[0];
}

// A day slot that began an hour ago: `rlock exec --once-per 1d --slot-offset ...`.
std::vector<std::string> day_slot(const RedisServer& redis) {
  return {"--once-per", "1d", "--slot-offset", offset_for(redis, kDay, kHour)};
}

std::vector<std::string> exec_args(const std::vector<std::string>& slot, const std::string& name,
                                   const std::vector<std::string>& command) {
  std::vector<std::string> args = {"exec"};
  args.insert(args.end(), slot.begin(), slot.end());
  args.push_back(name);
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

TEST_CASE("once-per: a second exec in the slot is busy at once, naming the slot and its host") {
  RedisServer redis;
  TempDir dir;
  const auto slot = day_slot(redis);
  const std::string marker = dir.path().string() + "/ran";
  const long long before = server_ms(redis);
  auto first = rlock(redis, exec_args(slot, "nightly", {"sh", "-c", "echo x >> " + marker}),
                     {{"RLOCK_OWNER", "host-a:1:aa"}});
  INFO("stderr: " << first.err);
  REQUIRE(first.status == 0);
  auto second = rlock(redis, exec_args(slot, "nightly", {"sh", "-c", "echo x >> " + marker}),
                      {{"RLOCK_OWNER", "host-b:2:bb"}});
  CHECK(second.status == 75);
  CHECK(line_count(second.err) == 1);
  CHECK(second.err.find("of 'nightly' (--once-per 1d) was already claimed by host ") !=
        std::string::npos);
  CHECK(second.err.find("(owner host-a:1:aa, exited 0)") != std::string::npos);
  CHECK(rlock(redis, exec_args(slot, "nightly", {"true"})).status == 75);
  CHECK(rlock(redis, exec_args(slot, "nightly", {"true"}), {{"RLOCK_OWNER", "x"}}).status == 75);
  CHECK(read_file(marker) == "x\n");
  // -E applies as to a busy lock.
  auto with_e = exec_args(slot, "nightly", {"true"});
  with_e.insert(with_e.begin() + 1, {"-E", "3"});
  CHECK(rlock(redis, with_e).status == 3);

  auto stored = records(redis, "nightly");
  REQUIRE(stored.size() == 1);
  CHECK(stored[0]["status"] == "exited");
  CHECK(stored[0]["exit_code"] == 0);
  CHECK(stored[0]["owner"] == "host-a:1:aa");
  CHECK(stored[0]["slot_ms"] == kDay);
  const long long start = stored[0]["slot_start_ms"].get<long long>();
  CHECK(start <= before - kHour + 1000);
  CHECK(start >= before - kHour - 5000);
  CHECK(stored[0]["ended_ms"].get<long long>() >= stored[0]["started_ms"].get<long long>());
  CHECK(redis.cmd_int({"PTTL", runs_key("nightly")}) == -1);
  // The lock itself is gone; the history stays.
  CHECK(redis.cmd_int({"EXISTS", lock_key("nightly")}) == 0);
  auto shown = inspected_runs(redis, "nightly");
  CHECK(shown["runs_total"] == 1);
  REQUIRE(shown["runs"].size() == 1);
  CHECK(shown["runs"][0]["status"] == "exited");
  CHECK(shown["runs"][0]["exit_code"] == 0);
  CHECK(shown["runs"][0]["owner"] == "host-a:1:aa");
  CHECK(shown["runs"][0]["ended_at"].get<std::string>().size() == 24);  // ...T..:..:..mmmZ
}

TEST_CASE("once-per: the next slot runs again, and a failing job's status is recorded") {
  RedisServer redis;
  // 4s slots, starting in the first second of one: three seconds for two execs.
  const std::vector<std::string> slot = {"--once-per", "4s"};
  REQUIRE(poll_until([&] { return server_ms(redis) % 4000 < 1000; }, 5s, 10ms));
  REQUIRE(rlock(redis, exec_args(slot, "tick", {"sh", "-c", "exit 3"})).status == 3);
  CHECK(rlock(redis, exec_args(slot, "tick", {"true"})).status == 75);
  const long long end = records(redis, "tick").at(0)["slot_end_ms"].get<long long>();
  REQUIRE(poll_until([&] { return server_ms(redis) >= end; }, 5s, 10ms));
  auto again = rlock(redis, exec_args(slot, "tick", {"true"}));
  INFO("stderr: " << again.err);
  CHECK(again.status == 0);
  auto stored = records(redis, "tick");
  REQUIRE(stored.size() == 2);
  CHECK(stored[0]["status"] == "exited");
  CHECK(stored[0]["exit_code"] == 0);
  CHECK(stored[0]["slot_start_ms"] == end);
  CHECK(stored[1]["exit_code"] == 3);
}

TEST_CASE("once-per: hosts whose clocks are an hour off run in the server's slot") {
  RedisServer redis;
  // An hour slot that began 30 minutes ago by the server: a client clock an hour ahead or
  // behind is in another slot of its own.
  const std::vector<std::string> slot = {"--once-per", "1h", "--slot-offset",
                                         offset_for(redis, kHour, 30 * 60 * 1000)};
  const long long now = server_ms(redis);
  auto ahead = run({"faketime", "-f", "+1h", rlock_binary(), "--url", redis.topology_url(), "exec",
                    slot[0], slot[1], slot[2], slot[3], "hourly", "--", "true"},
                   {{"RLOCK_OWNER", "ahead:1:aa"}});
  INFO("stderr: " << ahead.err);
  REQUIRE(ahead.status == 0);
  auto stored = records(redis, "hourly");
  REQUIRE(stored.size() == 1);
  const long long start = stored[0]["slot_start_ms"].get<long long>();
  CHECK(start <= now - 30 * 60 * 1000 + 1000);
  CHECK(start >= now - 30 * 60 * 1000 - 5000);
  CHECK(std::llabs(stored[0]["started_ms"].get<long long>() - now) < 10000);
  for (const char* skew : {"-1h", "+1h"}) {
    auto r = run({"faketime", "-f", skew, rlock_binary(), "--url", redis.topology_url(), "exec",
                  slot[0], slot[1], slot[2], slot[3], "hourly", "--", "true"});
    CAPTURE(skew);
    CHECK(r.status == 75);
    CHECK(r.err.find("(owner ahead:1:aa, exited 0)") != std::string::npos);
  }
  CHECK(records(redis, "hourly").size() == 1);
}

TEST_CASE("once-per: a slot whose lock is still held is skipped and recorded so") {
  RedisServer redis;
  TempDir dir;
  const std::string go = dir.path().string() + "/go";
  const std::vector<std::string> slot = {"--once-per", "1s"};
  Spawned slow = spawn_rlock(
      redis,
      exec_args(slot, "long", {"sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.05; done"}));
  REQUIRE(poll_until([&] { return redis.cmd_int({"LLEN", runs_key("long")}) == 1; }, 10s));
  const long long end = records(redis, "long").at(0)["slot_end_ms"].get<long long>();
  REQUIRE(poll_until([&] { return server_ms(redis) >= end; }, 5s, 10ms));
  auto skipped = rlock(redis, exec_args(slot, "long", {"true"}));
  CHECK(skipped.status == 75);
  CHECK(skipped.err.find("this slot's run is skipped") != std::string::npos);
  write_file(go, "");
  CHECK(slow.wait(deadline(10s)) == std::optional<int>(0));
  auto stored = records(redis, "long");
  REQUIRE(stored.size() == 2);
  CHECK(stored[0]["status"] == "skipped");
  CHECK(stored[0]["exit_code"].is_null());
  CHECK(stored[1]["status"] == "exited");
  auto shown = inspected_runs(redis, "long");
  CHECK(shown["runs"][0]["status"] == "skipped");
  CHECK(shown["runs"][1]["status"] == "exited");
}

TEST_CASE("once-per: a lost lock and a killed rlock are recorded as lost") {
  RedisServer redis;
  const auto slot = day_slot(redis);
  {  // The lock taken away while the job runs: rlock stops it, exits 76, records "lost".
    std::vector<std::string> args = exec_args(slot, "forced", {"sleep", "30"});
    args.insert(args.begin() + 1, {"--lease", "3s"});
    Spawned job = spawn_rlock(redis, args);
    REQUIRE(poll_until([&] { return redis.cmd_int({"EXISTS", lock_key("forced")}) == 1; }, 10s));
    REQUIRE(rlock(redis, {"unlock", "--force", "forced"}).status == 0);
    CHECK(job.wait(deadline(15s)) == std::optional<int>(76));
    auto stored = records(redis, "forced");
    REQUIRE(stored.size() == 1);
    CHECK(stored[0]["status"] == "lost");
    CHECK(stored[0]["ended_ms"].is_number());
  }
  {  // rlock SIGKILLed: nothing records the end; once the lease ran out (the guardian killed
     // the job) inspect shows "lost" with no end time, and the record still says running.
    std::vector<std::string> args = exec_args(slot, "killed", {"sleep", "30"});
    args.insert(args.begin() + 1, {"--lease", "2s"});
    Spawned job = spawn_rlock(redis, args);
    REQUIRE(poll_until([&] { return redis.cmd_int({"EXISTS", lock_key("killed")}) == 1; }, 10s));
    CHECK(inspected_runs(redis, "killed")["runs"][0]["status"] == "running");
    job.kill(SIGKILL);
    REQUIRE(job.wait(deadline(5s)).has_value());
    REQUIRE(poll_until([&] { return redis.cmd_int({"EXISTS", lock_key("killed")}) == 0; }, 10s));
    auto shown = inspected_runs(redis, "killed")["runs"][0];
    CHECK(shown["status"] == "lost");
    CHECK(shown["ended_at"].is_null());
    CHECK(records(redis, "killed").at(0)["status"] == "running");
  }
  {  // The job itself SIGKILLed: rlock exits 137 and records it as the job's status.
    auto r = rlock(redis, exec_args(slot, "shot", {"sh", "-c", "kill -KILL $$"}));
    CHECK(r.status == 137);
    CHECK(records(redis, "shot").at(0)["exit_code"] == 137);
  }
}

TEST_CASE("once-per: the history keeps the last runs; inspect --history shows N of them") {
  RedisServer redis;
  const std::vector<std::string> slot = {"--once-per", "100ms"};
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    if (i > 0) {
      const long long end = records(redis, "often").at(0)["slot_end_ms"].get<long long>();
      REQUIRE(poll_until([&] { return server_ms(redis) >= end; }, 5s, 5ms));
    }
    auto r = rlock(redis, exec_args(slot, "often", {"sh", "-c", "exit " + std::to_string(i)}));
    REQUIRE(r.status == i);
  }
  auto shown = inspected_runs(redis, "often", {"--history", "3"});
  CHECK(shown["runs_total"] == 5);
  REQUIRE(shown["runs"].size() == 3);
  CHECK(shown["runs"][0]["exit_code"] == 4);
  CHECK(shown["runs"][2]["exit_code"] == 2);
  CHECK(inspected_runs(redis, "often")["runs"].size() == 5);

  auto table =
      rlock(redis, {"inspect", "--type", "runs", "often", "--history", "2", "--format", "table"});
  REQUIRE(table.status == 0);
  CHECK(line_count(table.out) == 4);  // the header, the name's row, its two runs
  CHECK(table.out.find("last: exited 4 on ") != std::string::npos);
  CHECK(table.out.find("  exited 3  ") != std::string::npos);

  auto prom = rlock(redis, {"inspect", "often", "--format", "prometheus"});
  REQUIRE(prom.status == 0);
  CHECK(prom.out.find("rlock_last_run_exit_status{name=\"often\"} 4\n") != std::string::npos);
  const long long ended = records(redis, "often").at(0)["ended_ms"].get<long long>();
  CHECK(prom.out.find("rlock_last_run_end_timestamp_seconds{name=\"often\"} " +
                      std::to_string(ended / 1000)) != std::string::npos);

  for (const char* bad : {"0", "-1", "abc", "101"}) {
    CAPTURE(bad);
    auto r = rlock(redis, {"inspect", "often", "--history", bad});
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
}

TEST_CASE(
    "once-per: bad slots and what --once-per does not combine with exit 64, writing nothing") {
  RedisServer redis;
  TempDir dir;
  const std::string marker = dir.path().string() + "/ran";
  const std::vector<std::vector<std::string>> bad = {
      {"--once-per", "0"},
      {"--once-per", "7m"},
      {"--once-per", "25h"},
      {"--once-per", "abc"},
      {"--once-per", "1h", "--slot-offset", "-1s"},
      {"--once-per", "1h", "--slot-offset", "1h"},
      {"--once-per", "1h", "--slot-offset", "2h"},
      {"--slot-offset", "1m"},
      {"--once-per", "1h", "--wait", "10s"},
      {"--once-per", "1h", "--shared"},
  };
  const auto before = snapshot(redis);
  for (const auto& flags : bad) {
    CAPTURE(flags[0] + " " + flags[1] + (flags.size() > 2 ? " " + flags[2] : ""));
    auto r = rlock(redis, exec_args(flags, "job", {"sh", "-c", "echo x > " + marker}));
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  auto several = rlock(redis, {"exec", "--once-per", "1h", "a", "b", "--", "true"});
  CHECK(several.status == 64);
  // A quorum's members each keep their own list: refused before anything is sent.
  std::string members;
  for (int i = 0; i < 3; ++i)
    members += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(redis.port() + i);
  auto quorum = rlock_raw(
      {"--url", "redis-quorum://" + members, "exec", "--once-per", "1h", "job", "--", "true"});
  INFO("stderr: " << quorum.err);
  CHECK(quorum.status == 64);
  CHECK(quorum.err.find("not available on a quorum") != std::string::npos);
  CHECK(snapshot(redis) == before);
  CHECK_FALSE(std::filesystem::exists(marker));
  // An error before the job starts (a key of another type where the lock goes: 65) gives
  // the slot back: no record is left, and the slot runs once the key is gone.
  redis.cmd({"SET", lock_key("typed"), "x"});
  CHECK(rlock(redis, exec_args({"--once-per", "1d"}, "typed", {"true"})).status == 65);
  CHECK(redis.cmd_int({"EXISTS", runs_key("typed")}) == 0);
  redis.cmd({"DEL", lock_key("typed")});
  CHECK(rlock(redis, exec_args({"--once-per", "1d"}, "typed", {"true"})).status == 0);
  // 2d and 1d are whole days; 30m divides one.
  CHECK(rlock(redis, exec_args({"--once-per", "2d"}, "days", {"true"})).status == 0);
  CHECK(rlock(redis, exec_args({"--once-per", "30m"}, "halves", {"true"})).status == 0);
}

}  // namespace
}  // namespace rlock::test
