// --layout redisson against Redisson's own RLock scripts: node-redisson (a third-party
// client running them through ioredis) and the scripts' Lua text run verbatim with
// redis-cli EVAL (tests/redisson/README says where they come from).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "harness.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test {
namespace {

using redisson::epoch_ms;
using redisson::kPeerDir;
using redisson::redisson_eval;

bool peer_installed() { return redisson::peers_installed("node-redisson"); }

std::vector<std::string> peer(const RedisServer& redis, const std::string& name,
                              std::vector<std::string> args) {
  std::vector<std::string> argv = {"node", kPeerDir + "/peer.js", std::to_string(redis.port()),
                                   name};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> in_layout(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson"});
  return args;
}

// "+" and "-" lines of jobs that never overlapped alternate strictly.
void check_no_overlap(const std::string& log, int rounds) {
  std::string expected;
  for (int i = 0; i < rounds; ++i) expected += "+\n-\n";
  CHECK(log == expected);
}

TEST_CASE("redisson layout: rlock exec and node-redisson exclude each other over 30 rounds each") {
  if (!peer_installed()) {
    FAIL("node-redisson could not be installed in " << kPeerDir << " (node and npm needed)");
  }
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  Spawned node(peer(redis, "shared-job", {"rounds", "30", log}));
  // A short lease: a node-redisson waiter that sleeps past a wake-up (see peer.js) sleeps
  // for the lease it last saw, and 30 s of it ran past the peer's deadline (on Sentinel,
  // under load, about 1 run in 12). This case is about exclusion; wake-ups have their own.
  for (int i = 0; i < 30; ++i) {
    auto r =
        rlock(redis, in_layout({"exec", "--wait", "20s", "--lease", "2s", "shared-job", "--", "sh",
                                "-c", "echo + >> " + log + "; sleep 0.002; echo - >> " + log}));
    REQUIRE_MESSAGE(r.status == 0, r.err);
  }
  REQUIRE(node.wait(deadline(25s)).value_or(kStillRunning) == 0);
  check_no_overlap(read_file(log), 60);
  CHECK(redis.cmd_int({"EXISTS", "shared-job"}) == 0);
}

TEST_CASE("redisson layout: each side's release wakes the other side's waiter at once") {
  if (!peer_installed()) FAIL("node-redisson could not be installed in " << kPeerDir);
  RedisServer redis;
  // rlock holds with a 30 s lease; node-redisson's waiter would sleep until it expires.
  REQUIRE(rlock(redis, in_layout({"lock", "wake", "--owner", "o", "--lease", "30s"})).status == 0);
  Spawned waiter(peer(redis, "wake", {"wait"}));
  REQUIRE(waiter.read_line(deadline(10s)) == "ready");
  // Subscribed (Redisson subscribes before it tries): from then on the release reaches it,
  // whether it is trying or asleep on the holder's lease. (A fixed 300 ms was not always
  // enough under CI's load: it then slept until the lease ran out.)
  REQUIRE(poll_until([&] { return !redis.cmd({"PUBSUB", "CHANNELS", "*{wake}*"}).empty(); }, 10s));
  const long long released = epoch_ms();
  REQUIRE(rlock(redis, in_layout({"unlock", "wake", "--owner", "o"})).status == 0);
  auto acquired = waiter.read_line(deadline(10s));
  REQUIRE(acquired.has_value());
  const long long to_node = std::stoll(acquired->substr(acquired->find(' ') + 1)) - released;
  MESSAGE("rlock unlock -> node-redisson waiter holds: " << to_node << " ms");
  CHECK(to_node < 1000);
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);

  // node-redisson holds (30 s watchdog lease); rlock exec waits and runs when it unlocks.
  Spawned holder(peer(redis, "wake", {"hold", "800"}));
  REQUIRE(holder.read_line(deadline(10s)) == "held");
  auto job =
      spawn_rlock(redis, in_layout({"exec", "--wait", "20s", "wake", "--", "date", "+%s%3N"}));
  auto unlocked = holder.read_line(deadline(10s));
  REQUIRE(unlocked.has_value());
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  const long long to_rlock = std::stoll(job.out()) - std::stoll(unlocked->substr(9));
  MESSAGE("node-redisson unlock -> rlock exec's job starts: " << to_rlock << " ms");
  CHECK(to_rlock < 1000);
  REQUIRE(holder.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson layout: Redisson's scripts run verbatim exclude, renew and wake rlock") {
  RedisServer redis;
  const std::string java = "0f0e0d0c-0b0a-4908-8706-050403020100:7";
  const std::string channel = "redisson_lock__channel:{svc}";
  // Java holds: rlock is busy; Java re-enters.
  CHECK(redisson_eval(redis, "redisson_try_lock.lua", {"svc"}, {"30000", java}).out == "\n");
  CHECK(rlock(redis, in_layout({"exec", "-n", "svc", "--", "true"})).status == 75);
  CHECK(redisson_eval(redis, "redisson_try_lock.lua", {"svc"}, {"30000", java}).out == "\n");
  CHECK(hash_of(redis, "svc") == json::object({{java, "2"}}));
  auto listed = parse_json(rlock(redis, in_layout({"inspect"})).out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].at("holders").at(0).at("owner") == java);
  // rlock waits; Java's last unlock ("0" on Redisson's channel) wakes it.
  auto job =
      spawn_rlock(redis, in_layout({"exec", "--wait", "20s", "svc", "--", "date", "+%s%3N"}));
  // rlock waits (subscribed to Redisson's channel too) before Java unlocks.
  REQUIRE(poll_until([&] { return subscribers(redis, channel) == 1; }, 10s));
  CHECK(redisson_eval(redis, "redisson_unlock.lua", {"svc", channel}, {"0", "30000", java}).out ==
        "0\n");
  const long long released = epoch_ms();
  CHECK(redisson_eval(redis, "redisson_unlock.lua", {"svc", channel}, {"0", "30000", java}).out ==
        "1\n");
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  const long long to_rlock = std::stoll(job.out()) - released;
  MESSAGE("Redisson's unlock script -> rlock exec's job starts: " << to_rlock << " ms");
  CHECK(to_rlock < 1000);

  // rlock holds: Java's tryLock gets the lease left; Java's renewal of rlock's field (a
  // UUID derived from the owner, thread 1) is the PEXPIRE it expects; rlock's unlock
  // publishes Redisson's "0".
  REQUIRE(rlock(redis, in_layout({"lock", "svc", "--owner", "cron", "--lease", "20s"})).status ==
          0);
  auto fields = keys_of(hash_of(redis, "svc"));
  REQUIRE(fields.size() == 1);
  const std::string field = fields[0];
  CHECK(field.size() == 38);
  CHECK(field.substr(36) == ":1");
  auto ttl =
      std::stoll(redisson_eval(redis, "redisson_try_lock.lua", {"svc"}, {"30000", java}).out);
  CHECK(ttl > 15000);
  CHECK(redisson_eval(redis, "redisson_renew.lua", {"svc"}, {"60000", field}).out == "1\n");
  CHECK(redis.cmd_int({"PTTL", "svc"}) > 30000);
  Spawned sub({"redis-cli", "-p", std::to_string(redis.port()), "SUBSCRIBE", channel});
  for (int i = 0; i < 3; ++i) REQUIRE(sub.read_line(deadline(5s)).has_value());  // confirmation
  REQUIRE(rlock(redis, in_layout({"unlock", "svc", "--owner", "cron"})).status == 0);
  CHECK(sub.read_line(deadline(5s)) == "message");
  CHECK(sub.read_line(deadline(5s)) == channel);
  CHECK(sub.read_line(deadline(5s)) == "0");
  // rlock's own keys are under its prefix with the name's hash tag, never the bare name's.
  for (const auto& key : redis.cmd({"KEYS", "*"})) {
    CHECK((key.rfind("rlock:redisson:{svc}:", 0) == 0));
  }
}

// All or none in Redisson's layout too: a request for several names that fails gives back
// the hold it took under the owner's Redisson field (not the raw owner, which is not in the
// hash), and Redisson's waiters hear the lock is free.
TEST_CASE("redisson layout: a several-name request that fails gives back what it took") {
  RedisServer redis;
  REQUIRE(rlock(redis, in_layout({"lock", "B", "--owner", "other"})).status == 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"lock", "A", "B", "--owner", "me", "-n"},
        std::vector<std::string>{"lock", "A", "B", "--owner", "me", "--wait", "300ms"},
        std::vector<std::string>{"exec", "-n", "A", "B", "--", "true"}}) {
    CAPTURE(args[1]);
    auto r = rlock(redis, in_layout(args));
    CHECK(r.status == 75);
    CHECK(line_count(r.err) == 1);
    CHECK(redis.cmd_int({"EXISTS", "A"}) == 0);
    CHECK(rlock(redis, in_layout({"exec", "-n", "A", "--", "true"})).status == 0);
  }
  // The give-back announces the free lock on Redisson's channel (rlock's own channel is
  // sharded: SPUBLISH), as an unlock does.
  redis.cmd({"CONFIG", "RESETSTAT"});
  REQUIRE(rlock(redis, in_layout({"lock", "A", "B", "--owner", "me", "-n"})).status == 75);
  const std::string stats = redis.cmd_str({"INFO", "commandstats"});
  CHECK(stats.find("cmdstat_publish:") != std::string::npos);
}

// Redisson's lock hash lives under the bare name, which no --prefix moves: the refusal of
// a key of another type there points at another name too.
TEST_CASE("redisson layout: a key of another type under the name is refused, untouched") {
  RedisServer redis;
  redis.cmd({"SET", "taken", "x"});
  auto r = rlock(redis, in_layout({"lock", "taken", "--owner", "me"}));
  CHECK(r.status == 65);
  CHECK(r.err ==
        "rlock: key 'taken' holds a string, not a lock; rlock will not overwrite it "
        "(delete it, or use another name or --prefix)\n");
  CHECK(redis.cmd_str({"GET", "taken"}) == "x");
}

// Redisson's sharded mode (a Redis 7 cluster) sends its unlock message with SPUBLISH: a
// waiting rlock hears it there too, not only a classic PUBLISH, and does not sleep until
// the lease it was told runs out.
TEST_CASE("redisson layout: a Redisson release announced with SPUBLISH wakes rlock's waiter") {
  RedisServer redis;
  const std::string java = "0f0e0d0c-0b0a-4908-8706-050403020100:7";
  const std::string channel = "redisson_lock__channel:{sharded}";
  REQUIRE(redisson_eval(redis, "redisson_try_lock.lua", {"sharded"}, {"20000", java}).out == "\n");
  auto job =
      spawn_rlock(redis, in_layout({"exec", "--wait", "30s", "sharded", "--", "date", "+%s%3N"}));
  REQUIRE(poll_until(
      [&] {
        return redis.cmd({"PUBSUB", "SHARDNUMSUB", channel}).at(1) == "1";
      },
      10s));
  const std::string unlock = read_file(kPeerDir + "/redisson_unlock.lua");
  std::string sharded;  // Redisson's unlock script with its sharded mode's publish command
  for (size_t at = 0, next; at < unlock.size(); at = next + 7) {
    next = unlock.find("publish", at);
    sharded += unlock.substr(at, next == std::string::npos ? next : next - at);
    if (next == std::string::npos) break;
    sharded += "spublish";
  }
  const long long released = epoch_ms();
  CHECK(run({"redis-cli", "-p", std::to_string(redis.port()), "EVAL", sharded, "2", "sharded",
             channel, "0", "30000", java})
            .out == "1\n");
  REQUIRE(job.wait(deadline(20s)).value_or(kStillRunning) == 0);
  const long long to_rlock = std::stoll(job.out()) - released;
  MESSAGE("Redisson's unlock with SPUBLISH -> rlock exec's job starts: " << to_rlock << " ms");
  CHECK(to_rlock < 5000);  // the lease it was told: 20 s
}

TEST_CASE("redisson layout: other primitives, shared holds and names with braces are refused") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> refused = {
      {"delay-push", "q", "--delay", "1s", "x"},
      {"--redisson-object", "lock", "lock", "-s", "x", "--owner", "o"},
      {"lock", "a{b}", "--owner", "o"},
      {"inspect", "--type", "queue"}};
  for (const auto& args : refused) {
    auto r = rlock(redis, in_layout(args));
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  auto bad = rlock(redis, {"lock", "x", "--owner", "o"}, {{"RLOCK_LAYOUT", "java"}});
  CHECK(bad.status == 64);
  CHECK(bad.err.find("RLOCK_LAYOUT") != std::string::npos);
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

}  // namespace
}  // namespace rlock::test
