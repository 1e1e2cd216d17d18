// `rlock limit` as a command line: --wait and signals during it, -- CMD, --peek, --reset,
// expiry, an unreachable or stalled server and --fail-open, bad input that changes nothing,
// the documented ACL, help.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness.hpp"
#include "limit_helpers.hpp"
#include "reply_records.hpp"

namespace rlock::test {

TEST_CASE("limit: --wait wakes within 20ms (median) of the reported retry time") {
  RedisServer redis;
  std::vector<long long> late;
  for (int i = 0; i < 7; ++i) {
    rlock(redis, {"limit", "w", "--reset"});
    auto first = decide(redis, {"w", "--rate", "1", "--per", "300ms"});
    auto r = rlock(redis, {"-v", "limit", "w", "--rate", "1", "--per", "300ms", "--wait", "5s"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.find("retrying in") != std::string::npos);
    long long due = first.at("now_ms").get<long long>() + 300;
    late.push_back(parse_json(r.out).at("now_ms").get<long long>() - due);
  }
  std::sort(late.begin(), late.end());
  CAPTURE(json(late).dump());
  CHECK(late[3] >= -1);  // truncation to ms
  CHECK(late[3] <= 20);

  // A retry time beyond what is left of --wait gives up at once.
  decide(redis, {"g", "--rate", "1", "--per", "1h"});
  auto r = rlock(redis, {"-v", "limit", "g", "--rate", "1", "--per", "1h", "--wait", "2s"});
  CHECK(r.status == 75);
  CHECK(r.elapsed < 1500ms);
  CHECK(r.err.find("giving up now") != std::string::npos);
  CHECK(parse_json(r.out).at("allowed") == false);
  CHECK(rlock(redis, {"limit", "g", "--rate", "1", "--per", "1h", "-E", "9"}).status == 9);
}

TEST_CASE("limit: INT or TERM during --wait ends it with 128+N") {
  RedisServer redis;
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    decide(redis, {"s", "--rate", "1", "--per", "1h"});
    for (bool with_command : {false, true}) {
      std::vector<std::string> args = {"-v",    "limit", "s",      "--rate", "1",
                                       "--per", "1h",    "--wait", "inf"};
      if (with_command) args.insert(args.end(), {"--", "true"});
      auto p = spawn_rlock(redis, args);
      REQUIRE(saw_retrying(p));
      p.kill(sig);
      CHECK(p.wait(deadline(5s)).value_or(kStillRunning) == 128 + sig);
    }
    rlock(redis, {"limit", "s", "--reset"});
  }
}

TEST_CASE("limit: stopped past the end of --wait, rlock gives up: the command does not run") {
  RedisServer redis;
  TempDir dir;
  decide(redis, {"stop", "--rate", "1", "--per", "1s"});
  auto p = spawn_rlock(redis, {"-v", "limit", "stop", "--rate", "1", "--per", "1s", "--wait",
                               "1500ms", "--", "touch", dir / "ran"});
  REQUIRE(saw_retrying(p));
  p.kill(SIGSTOP);
  std::this_thread::sleep_for(2s);  // past the end of --wait: what is tested, not a sync
  p.kill(SIGCONT);
  CHECK(p.wait(deadline(5s)).value_or(kStillRunning) == 75);
  CHECK(!std::filesystem::exists(dir / "ran"));
  // Nothing was consumed by the wait: the limiter is full again a second after the first call.
  CHECK(decide(redis, {"stop", "--rate", "1", "--per", "1s", "--peek"}).at("remaining") == 1);
}

TEST_CASE("limit: -- CMD runs when allowed and exits with its status; limited: not run, 75") {
  RedisServer redis;
  TempDir dir;
  const std::vector<std::string> base = {"limit", "c",       "--rate", "1", "--per",
                                         "1h",    "--burst", "2",      "--"};
  auto with = [&](std::vector<std::string> cmd) {
    auto a = base;
    a.insert(a.end(), cmd.begin(), cmd.end());
    return a;
  };
  auto r =
      rlock(redis, with({"sh", "-c", "echo \"$RLOCK_NAME\" > \"$1\"; exit 7", "sh", dir / "ran"}));
  CHECK(r.status == 7);
  CHECK(r.out.empty());
  CHECK(read_file(dir / "ran") == "c\n");
  CHECK(rlock(redis, with({"sh", "-c", "kill -TERM $$"})).status == 128 + SIGTERM);
  r = rlock(redis, with({"touch", dir / "not-run"}));
  CHECK(r.status == 75);
  CHECK(parse_json(r.out).at("allowed") == false);
  CHECK(line_count(r.err) == 1);
  CHECK(!std::filesystem::exists(dir / "not-run"));
}

TEST_CASE("limit: --peek consumes nothing, --reset clears, keys expire when idle and full") {
  RedisServer redis;
  const std::vector<std::string> cfg = {"p", "--rate", "2", "--per", "1s", "--burst", "3"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = cfg;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto peek = decide(redis, with({"--peek"}));
  CHECK(peek.at("allowed") == true);
  CHECK(peek.at("remaining") == 3);
  CHECK(peek.at("limit") == 3);
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
  auto first = decide(redis, with({}));
  CHECK(first.at("remaining") == 2);
  CHECK(first.at("reset_after_ms") == 500);
  decide(redis, with({}));
  auto third = decide(redis, with({"--cost", "1"}));
  CHECK(third.at("remaining") == 0);
  long long pttl = redis.cmd_int({"PTTL", limiter_key("p")});
  CHECK(pttl > 0);
  CHECK(pttl <= 1500);
  const auto before = snapshot(redis);
  auto refused = decide(redis, with({"--peek"}), 75);
  CHECK(refused.at("retry_after_ms").get<long long>() > 0);
  CHECK(refused.at("retry_after_ms").get<long long>() <= 500);
  CHECK(snapshot(redis) == before);
  decide(redis, with({}), 75);
  CHECK(snapshot(redis) == before);  // a limited call writes nothing

  auto reset = parse_json(rlock(redis, {"limit", "p", "--reset"}).out);
  CHECK(reset == json{{"name", "p"}, {"reset", true}, {"client_buckets", 0}});
  CHECK(keys_but_reply_records(redis).empty());
  CHECK(parse_json(rlock(redis, {"limit", "p", "--reset"}).out).at("reset") == false);
  CHECK(decide(redis, with({"--cost", "3"})).at("remaining") == 0);

  // Idle and full again: both keys are gone by themselves.
  decide(redis, {"e", "--rate", "1", "--per", "400ms", "--client", "x"});
  CHECK(redis.cmd_int({"PTTL", clients_key("e")}) > 0);
  CHECK(redis.cmd_int({"PTTL", clients_key("e")}) <= 400);
  CHECK(redis.cmd_int({"PTTL", limiter_key("e")}) <= 400);
  CHECK(poll_until(
      [&] {
        return redis.cmd_int({"EXISTS", limiter_key("e"), clients_key("e")}) == 0;
      },
      3s));
}

// As go-redis/redis_rate reports a call of cost 0: the state as it is, not as if the
// peeked call had been consumed.
TEST_CASE("limit: --peek reports reset_after_ms of the state as it is") {
  RedisServer redis;
  const std::vector<std::string> cfg = {"pk", "--rate", "10", "--per", "1s", "--burst", "10"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = cfg;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto fresh = decide(redis, with({"--peek", "--cost", "3"}));
  CHECK(fresh.at("allowed") == true);
  CHECK(fresh.at("remaining") == 10);
  CHECK(fresh.at("retry_after_ms") == 0);
  CHECK(fresh.at("reset_after_ms") == 0);  // nothing stored: full now
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);

  auto used = decide(redis, with({"--cost", "3"}));
  CHECK(used.at("remaining") == 7);
  CHECK(used.at("reset_after_ms") == 300);
  // The key expires when the limiter is full again: a peek says the same, within the
  // rounding up of both to whole milliseconds.
  const long long before = redis.cmd_int({"PTTL", limiter_key("pk")});
  auto peek = decide(redis, with({"--peek", "--cost", "3"}));
  const long long after = redis.cmd_int({"PTTL", limiter_key("pk")});
  INFO("PTTL before " << before << ", peek " << peek.dump() << ", PTTL after " << after);
  CHECK(peek.at("allowed") == true);
  CHECK(peek.at("remaining") == 7);
  CHECK(peek.at("reset_after_ms").get<long long>() <= before + 1);
  CHECK(peek.at("reset_after_ms").get<long long>() >= after);
  CHECK(peek.at("reset_after_ms").get<long long>() <= 300);
}

TEST_CASE("limit: Redis unreachable exits 69; --fail-open lets the call through, saying so") {
  const std::string url = "redis://127.0.0.1:" + std::to_string(free_port());
  auto r = rlock_raw({"--url", url, "limit", "f", "--rate", "1", "--per", "1s"});
  CHECK(r.status == 69);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  r = rlock_raw({"--url", url, "limit", "f", "--rate", "1", "--per", "1s", "--fail-open"});
  CHECK(r.status == 0);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("--fail-open") != std::string::npos);
  auto j = parse_json(r.out);
  CHECK(j.at("allowed") == true);
  CHECK(j.at("failed_open") == true);
  r = rlock_raw({"--url", url, "limit", "f", "--rate", "1", "--per", "1s", "--fail-open", "--",
                 "sh", "-c", "exit 5"});
  CHECK(r.status == 5);
  CHECK(line_count(r.err) == 1);
}

TEST_CASE("limit: a stalled server: 69 at --timeout; --fail-open runs the command once") {
  RedisServer redis;
  TempDir dir;
  decide(redis, {"st", "--rate", "3", "--per", "1h", "--burst", "3"});
  redis.freeze();
  auto r = rlock(
      redis, {"--timeout", "300ms", "limit", "st", "--rate", "3", "--per", "1h", "--burst", "3"});
  CHECK(r.status == 69);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  CHECK(r.elapsed < 3s);
  r = rlock(redis, {"--timeout", "300ms", "limit", "st", "--rate", "3", "--per", "1h", "--burst",
                    "3", "--fail-open", "--", "sh", "-c", "echo ran >> \"$1\"", "sh", dir / "ran"});
  redis.thaw();
  CHECK(r.status == 0);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("--fail-open") != std::string::npos);
  CHECK(read_file(dir / "ran") == "ran\n");
  // A timed-out decision may still be applied when the server resumes (rlock(1) says so):
  // one sent before the stall was noticed is (the script waits in the server), one stopped
  // earlier is not (behind a sentinel, the master's ROLE check timed out first). Each
  // decision the server ran left its reply record (they live at least 5s); rlock never
  // repeats one, so the bucket holds exactly what the server ran, each once.
  const long long ran = static_cast<long long>(redis.cmd({"KEYS", "rlock:req:{st}:*"}).size());
  CHECK(ran >= 1);  // the first decision
  CHECK(ran <= 3);
  auto left = decide(redis, {"st", "--rate", "3", "--per", "1h", "--burst", "3", "--peek"},
                     /*status=*/ran == 3 ? 75 : 0);
  CHECK(left.at("remaining") == 3 - ran);
}

TEST_CASE("limit: bad input is one stderr line with its code and changes nothing") {
  RedisServer redis;
  decide(redis, {"live", "--rate", "10", "--per", "1h", "--burst", "2"});
  decide(redis, {"pcl", "--rate", "10", "--per", "1h", "--client", "a", "--client-rate", "2"});
  redis.cmd({"SET", limiter_key("str"), "x"});                          // another type
  redis.cmd({"SET", clients_key("zs"), "x"});                           // clients: not a zset
  redis.cmd({"HSET", limiter_key("junk"), "rate", "ten", "tat", "1"});  // malformed
  redis.cmd({"HSET", limiter_key("lockish"), "o1", "1"});               // a lock-shaped hash
  // Stored fields no rlock writes: a TAT that is no finite number, a rate of 0, a
  // per_client other than 0/1, a client's TAT of +inf.
  const std::string cfg[] = {"rate", "10",         "per_ms", "3600000",     "burst",
                             "2",    "per_client", "0",      "client_rate", "0"};
  auto stored = [&](const std::string& name, std::vector<std::string> fields) {
    std::vector<std::string> c = {"HSET", limiter_key(name)};
    c.insert(c.end(), std::begin(cfg), std::end(cfg));
    c.insert(c.end(), fields.begin(), fields.end());
    redis.cmd(c);
  };
  stored("nan", {"tat", "nan"});
  stored("inf", {"tat", "inf"});
  stored("rate0", {"rate", "0"});
  stored("pc2", {"per_client", "2"});
  stored("cinf", {"per_client", "1"});
  redis.cmd({"ZADD", clients_key("cinf"), "+inf", "a"});

  struct Case {
    std::vector<std::string> args;
    int status;
  };
  const std::vector<std::string> ok = {"--rate", "10", "--per", "1h", "--burst", "2"};
  auto with = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> a = {"limit", name};
    a.insert(a.end(), ok.begin(), ok.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const Case cases[] = {
      {{"limit", "n", "--rate", "0", "--per", "1s"}, 64},
      {{"limit", "n", "--rate", "-3", "--per", "1s"}, 64},
      {{"limit", "n", "--rate", "1.5", "--per", "1s"}, 64},
      {{"limit", "n", "--rate", "ten", "--per", "1s"}, 64},
      {{"limit", "n", "--rate", "1", "--per", "0"}, 64},
      {{"limit", "n", "--rate", "1", "--per", "soon"}, 64},
      {{"limit", "n", "--rate", "1", "--per", ""}, 64},
      {{"limit", "n", "--rate", "1"}, 64},
      {{"limit", "n", "--per", "1s"}, 64},
      {{"limit", "n", "--rate", "1", "--per", "1s", "--burst", "0"}, 64},
      {{"limit", "n", "--rate", "1", "--per", "36500d", "--burst", "2"}, 64},
      {with("live", {"--cost", "0"}), 64},
      {with("live", {"--cost", "-1"}), 64},
      {with("live", {"--cost", "3"}), 64},
      {with("live", {"--client", "a", "--client-rate", "0"}), 64},
      {with("live", {"--client-rate", "2"}), 64},
      {with("live", {"--client", ""}), 64},
      {with("live", {"--client", "a\tb"}), 64},
      {with("live", {"--wait", "later"}), 64},
      {with("live", {"--peek", "--reconfigure"}), 64},
      {with("live", {"--peek", "--", "true"}), 64},
      {with("live", {"--"}), 64},
      {with("live", {"-E", "300"}), 64},
      {{"limit", "live", "--reset", "--rate", "1"}, 64},
      {{"limit", "live", "--reset", "--", "true"}, 64},
      {{"limit", "live", "--reset", "-E", "3"}, 64},
      {{"limit", "live", "--reset", "--client", "a"}, 64},
      {{"limit", "", "--rate", "1", "--per", "1s"}, 64},
      {{"limit", "live", "--rate", "11", "--per", "1h", "--burst", "2"}, 65},
      {{"limit", "live", "--rate", "10", "--per", "1m", "--burst", "2"}, 65},
      {{"limit", "live", "--rate", "10", "--per", "1h", "--burst", "3"}, 65},
      {{"limit", "live", "--rate", "10", "--per", "1h", "--burst", "3", "--peek"}, 65},
      {with("live", {"--client", "a"}), 65},
      {{"limit", "pcl", "--rate", "10", "--per", "1h", "--client", "a", "--client-rate", "3"}, 65},
      {{"limit", "pcl", "--rate", "10", "--per", "1h"}, 65},
      {with("str", {}), 65},
      {with("str", {"--peek"}), 65},
      {{"limit", "str", "--reset"}, 65},
      {with("zs", {"--client", "a"}), 65},
      {with("junk", {}), 65},
      {with("lockish", {}), 65},
      {with("nan", {}), 65},
      {with("nan", {"--reconfigure"}), 65},
      {with("inf", {}), 65},
      {with("rate0", {"--reconfigure"}), 65},
      {with("pc2", {"--reconfigure"}), 65},
      {with("cinf", {"--client", "b"}), 65},
  };
  const auto before = snapshot(redis);
  for (const auto& c : cases) {
    CAPTURE(json(c.args).dump());
    auto r = rlock(redis, c.args);
    INFO("stderr: " << r.err);
    CHECK(r.status == c.status);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(snapshot(redis) == before);
  }
  // inspect shows such data as not well-formed rather than a count made of it.
  for (const char* name : {"nan", "inf", "rate0", "pc2"}) {
    CAPTURE(name);
    auto rows = parse_json(rlock(redis, {"inspect", "--type", "limiter", name}).out);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("error") == "config is not well-formed");
  }
  // The mismatch line names both configs.
  auto r = rlock(redis, {"limit", "live", "--rate", "11", "--per", "1h", "--burst", "2"});
  CHECK(r.err.find("--rate 10 --per 1h --burst 2") != std::string::npos);
  CHECK(r.err.find("given --rate 11 --per 1h --burst 2") != std::string::npos);
}

// The rights the limiter's scripts need (see ACL in rlock(1)).
const std::string kLimitAcl =
    "user rl on >rlpw resetkeys ~rlock:* resetchannels &rlock:* -@all +evalsha +eval +ping "
    "+type +hmget +hget +exists +time +zscore +zrange +zcard +hset +hdel +del "
    "+zremrangebyscore +zadd +pexpire +get +set";

TEST_CASE("limit: the documented rights suffice; an ACL missing one changes nothing (77)") {
  RedisServer redis;
  const std::vector<std::string> call = {"limit",    "a", "--rate",        "5", "--per", "1h",
                                         "--client", "c", "--client-rate", "2"};
  {
    as_new_server_with_user(redis, kLimitAcl);
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    CHECK(rlock_raw(call, as_rl).status == 0);
    CHECK(rlock_raw(call, as_rl).status == 75);
    CHECK(rlock_raw({"limit", "a", "--reset"}, as_rl).status == 0);
  }
  for (const char* missing : {"hset", "hdel", "zadd", "zremrangebyscore", "pexpire", "del"}) {
    CAPTURE(missing);
    as_new_server_with_user(redis, kLimitAcl + " -" + missing);
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    REQUIRE(rlock(redis, {"limit", "b", "--rate", "5", "--per", "1h"}).status == 0);
    const auto before = snapshot(redis);
    for (const auto& args : std::vector<std::vector<std::string>>{
             call, {"limit", "b", "--rate", "5", "--per", "1h"}, {"limit", "b", "--reset"}}) {
      if (args.back() == "--reset" && std::string(missing) != "del") continue;
      CAPTURE(json(args).dump());
      auto r = rlock_raw(args, as_rl);
      CHECK(r.status == 77);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("NOPERM") != std::string::npos);
    }
    CHECK(snapshot(redis) == before);
  }
}

TEST_CASE("limit: help describes the output and has examples") {
  auto r = rlock_raw({"help", "limit"});
  CHECK(r.status == 0);
  CHECK(r.out.find("retry_after_ms") != std::string::npos);
  CHECK(r.out.find("Examples:") != std::string::npos);
  CHECK(r.out.find("--reconfigure") != std::string::npos);
}

}  // namespace rlock::test
