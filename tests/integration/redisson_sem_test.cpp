// --layout redisson `sem` against Redisson's own RPermitExpirableSemaphore scripts, run
// verbatim (tests/redisson/redisson_pes_*.lua) by tests/redisson/sem_peer.js as
// RedissonPermitExpirableSemaphore.acquire(leaseTime) runs them, and through redis-cli
// EVAL: one permit count for both sides, each side's release waking the other's waiter on
// redisson_sc:{NAME}, permits that expire, and ids either side can release.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "harness.hpp"
#include "lossy_proxy.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test {
namespace {

using redisson::epoch_ms;
using redisson::kPeerDir;
using redisson::redisson_eval;

bool peer_installed() { return redisson::peers_installed("ioredis"); }

Spawned java(const RedisServer& redis, const std::string& name, std::vector<std::string> args,
             bool sharded = false) {
  return redisson::sem_peer(redis, name, std::move(args), sharded);
}

std::vector<std::string> pes(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson"});
  return args;
}

// The ms and the rest of a "<word> <ms> <rest>" line of sem_peer.js.
std::pair<long long, std::string> stamped(const std::optional<std::string>& line) {
  REQUIRE(line.has_value());
  std::istringstream in(*line);
  std::string word, rest;
  long long ms = 0;
  in >> word >> ms >> rest;
  return {ms, rest};
}

std::string timeout_of(const std::string& name) { return "{" + name + "}:timeout"; }
std::string channel_of(const std::string& name) { return "redisson_sc:{" + name + "}"; }

// The most "+" lines of `log` open at once ("-" closes one).
int max_open(const std::string& log, int& total) {
  int open = 0, most = 0;
  total = 0;
  for (size_t i = 0; i + 1 < log.size(); i += 2) {
    if (log[i] == '+') ++total;
    open += log[i] == '+' ? 1 : -1;
    most = std::max(most, open);
  }
  return most;
}

void wait_subscribed(const RedisServer& redis, const std::string& channel, bool sharded) {
  REQUIRE(poll_until(
      [&] {
        return redis.cmd({"PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB", channel}).at(1) != "0";
      },
      10s));
}

TEST_CASE("redisson sem: 2 permits shared by 2 rlock and 2 Java clients over 60 holds") {
  REQUIRE(peer_installed());
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  REQUIRE(java(redis, "pc", {"set", "2"}).wait(deadline(10s)) == std::optional<int>(0));
  Spawned j1 = java(redis, "pc", {"rounds", "15", log, "10000"});
  Spawned j2 = java(redis, "pc", {"rounds", "15", log, "10000"});
  const std::vector<std::string> job = {"sh", "-c",
                                        "echo + >> " + log + "; sleep 0.005; echo - >> " + log};
  for (int i = 0; i < 15; ++i) {
    std::vector<std::string> args = {"sem", "exec",    "--permits", "2",  "--wait",
                                     "30s", "--lease", "5s",        "pc", "--"};
    args.insert(args.end(), job.begin(), job.end());
    Spawned a = spawn_rlock(redis, pes(args));
    Spawned b = spawn_rlock(redis, pes(args));
    REQUIRE(a.wait(deadline(30s)).value_or(kStillRunning) == 0);
    REQUIRE(b.wait(deadline(30s)).value_or(kStillRunning) == 0);
  }
  REQUIRE(j1.wait(deadline(30s)).value_or(kStillRunning) == 0);
  REQUIRE(j2.wait(deadline(30s)).value_or(kStillRunning) == 0);
  int total = 0;
  const int most = max_open(read_file(log), total);
  MESSAGE("most holds at once: " << most);
  CHECK(total == 60);
  CHECK(most <= 2);
  CHECK(redis.cmd({"GET", "pc"}).at(0) == "2");
  CHECK(redis.cmd_int({"EXISTS", timeout_of("pc")}) == 0);
}

TEST_CASE("redisson sem: each side's release wakes the other side's waiter at once") {
  REQUIRE(peer_installed());
  for (bool sharded : {false, true}) {
    CAPTURE(sharded);
    RedisServer redis;
    const std::string name = sharded ? "ws" : "wc";
    auto held = rlock(redis, pes({"sem", "acquire", "--permits", "1", "--lease", "30s", name}));
    REQUIRE(held.status == 0);
    const std::string id = held.out.substr(held.out.find("\"permits\":[\"") + 12, 32);
    Spawned j = java(redis, name, {"wait", "30000", "300"}, sharded);
    REQUIRE(j.read_line(deadline(10s)) == "busy");
    wait_subscribed(redis, channel_of(name), sharded);
    const long long released = epoch_ms();
    REQUIRE(rlock(redis, pes({"sem", "release", name, "--permit", id})).status == 0);
    const long long java_at = stamped(j.read_line(deadline(10s))).first;
    auto r = spawn_rlock(redis, pes({"sem", "exec", "--permits", "1", "--wait", "20s", name, "--",
                                     "date", "+%s%3N"}));
    const long long java_released = stamped(j.read_line(deadline(10s))).first;
    REQUIRE(r.wait(deadline(20s)).value_or(kStillRunning) == 0);
    const long long rlock_at = std::stoll(r.out());
    MESSAGE((sharded ? "sharded: " : "classic: ")
            << "rlock release -> Java waiter holds: " << java_at - released << " ms");
    MESSAGE((sharded ? "sharded: " : "classic: ")
            << "Java release -> rlock exec job starts: " << rlock_at - java_released << " ms");
    // The first includes starting `rlock sem release`; neither waits for a lease (30 s).
    CHECK(java_at - released < 1000);
    CHECK(rlock_at >= java_released);
    CHECK(rlock_at - java_released < 1000);
    REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
    CHECK(redis.cmd({"GET", name}).at(0) == "1");
  }
}

TEST_CASE("redisson sem: a Java permit whose expiry passed is reclaimed by rlock's waiter") {
  REQUIRE(peer_installed());
  RedisServer redis;
  REQUIRE(java(redis, "ex", {"set", "1"}).wait(deadline(10s)) == std::optional<int>(0));
  Spawned j = java(redis, "ex", {"take", "1500"});
  const long long expires = stamped(j.read_line(deadline(10s))).first + 1500;
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto r = rlock(redis, pes({"sem", "acquire", "--permits", "1", "--wait", "10s", "ex"}));
  const long long at = epoch_ms();
  REQUIRE_MESSAGE(r.status == 0, r.err);
  MESSAGE("Java permit's expiry -> rlock holds it: " << at - expires << " ms");
  CHECK(at >= expires - 50);  // the expiry is Java's clock; rlock judges by the server's
  CHECK(at - expires < 1500);
  CHECK(redis.cmd({"GET", "ex"}).at(0) == "0");
  CHECK(redis.cmd_int({"ZCARD", timeout_of("ex")}) == 1);
}

TEST_CASE("redisson sem: exec's renewals keep a permit past its lease; Java waits meanwhile") {
  REQUIRE(peer_installed());
  RedisServer redis;
  auto job = spawn_rlock(redis, pes({"sem", "exec", "--permits", "1", "--lease", "1s", "rn", "--",
                                     "sh", "-c", "echo started; sleep 2.5"}));
  REQUIRE(job.read_line(deadline(10s)) == "started");
  const long long started = epoch_ms();
  Spawned j = java(redis, "rn", {"wait", "30000", "0"});
  REQUIRE(j.read_line(deadline(10s)) == "busy");
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  const long long java_at = stamped(j.read_line(deadline(10s))).first;
  CHECK(java_at - started >= 2400);  // never while the job ran, 2.5 s on a 1 s lease
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson sem: a SIGSTOPped rlock holder's job dies before Java gets the permit") {
  REQUIRE(peer_installed());
  RedisServer redis;
  auto job = spawn_rlock(
      redis, pes({"sem", "exec", "--permits", "1", "--lease", "2s", "--kill-after", "1s", "st",
                  "--", "sh", "-c", "trap '' TERM; echo $$; exec sleep 60"}));
  auto line = job.read_line(deadline(10s));
  REQUIRE(line.has_value());
  PidGuard child(static_cast<pid_t>(std::stol(*line)));
  job.kill(SIGSTOP);
  Spawned j = java(redis, "st", {"wait", "30000", "0"});
  REQUIRE(j.read_line(deadline(10s)) == "busy");
  REQUIRE(j.read_line(deadline(15s)).has_value());  // acquired: rlock's permit expired
  CHECK(child.wait_gone(0ms));
  job.kill(SIGCONT);
  CHECK(job.wait(deadline(10s)) == std::optional<int>(76));
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson sem: ids, counts and expiries are Redisson's, read by its own scripts") {
  REQUIRE(peer_installed());
  RedisServer redis;
  auto a = rlock(
      redis, pes({"sem", "acquire", "--permits", "3", "--count", "2", "--lease", "20s", "ids"}));
  REQUIRE(a.status == 0);
  const std::vector<std::string> keys = {"ids", timeout_of("ids"), channel_of("ids")};
  const std::string now = std::to_string(epoch_ms());
  CHECK(redisson_eval(redis, "redisson_pes_available_permits.lua", keys, {now, "publish"}).out ==
        "1\n");
  CHECK(redisson_eval(redis, "redisson_pes_try_set_permits.lua", {"ids", channel_of("ids")},
                      {"5", "publish"})
            .out == "0\n");
  const std::string id = a.out.substr(a.out.find("\"permits\":[\"") + 12, 32);
  CHECK(java(redis, "ids", {"release", id}).wait(deadline(10s)) == std::optional<int>(0));
  auto s = rlock(redis, pes({"sem", "status", "ids"}));
  CHECK(s.out.find("\"capacity\":3,\"in_use\":1,\"free\":2") != std::string::npos);
  CHECK(s.out.find(id) == std::string::npos);
  // A Java holder's permit, freed with --force and its Java id shown.
  Spawned j = java(redis, "ids", {"take", "0"});
  const std::string java_id = stamped(j.read_line(deadline(10s))).second;
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto forced = rlock(redis, pes({"sem", "release", "--force", "ids"}));
  CHECK(forced.status == 0);
  CHECK(forced.out.find(java_id) != std::string::npos);
  CHECK(redis.cmd({"GET", "ids"}).at(0) == "3");
  CHECK(redis.cmd_int({"EXISTS", timeout_of("ids")}) == 0);
  // A different --permits is refused; --resize sets the total, as setPermits does.
  CHECK(rlock(redis, pes({"sem", "acquire", "--permits", "4", "ids"})).status == 65);
  CHECK(rlock(redis, pes({"sem", "acquire", "--permits", "4", "--resize", "ids"})).status == 0);
  CHECK(redis.cmd({"GET", "ids"}).at(0) == "3");
}

TEST_CASE("redisson sem: inspect and unlock --force show and free permits only Java took") {
  REQUIRE(peer_installed());
  RedisServer redis;
  REQUIRE(java(redis, "jo", {"set", "3"}).wait(deadline(10s)) == std::optional<int>(0));
  Spawned a = java(redis, "jo", {"take", "60000"});
  const std::string timed = stamped(a.read_line(deadline(10s))).second;
  REQUIRE(a.wait(deadline(10s)).value_or(kStillRunning) == 0);
  Spawned b = java(redis, "jo", {"take", "0"});
  const std::string never = stamped(b.read_line(deadline(10s))).second;
  REQUIRE(b.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto shown = rlock(redis, pes({"inspect", "--type", "sem"}));
  REQUIRE(shown.status == 0);
  CHECK(shown.out.find("\"name\":\"jo\",\"key\":\"{jo}:timeout\",\"capacity\":3") !=
        std::string::npos);
  CHECK(shown.out.find("\"permits_total\":2") != std::string::npos);
  CHECK(shown.out.find("{\"id\":\"" + never + "\",\"owner\":null,\"lease_ms\":-1") !=
        std::string::npos);
  CHECK(shown.out.find(timed) != std::string::npos);
  const std::vector<std::string> pes_object = {"--redisson-object", "permit-expirable-semaphore"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), pes_object.begin(), pes_object.end());
    return pes(args);
  };
  CHECK(rlock(redis, with({"unlock", "jo", "--owner", "x"})).status == 64);
  auto forced = rlock(redis, with({"unlock", "--force", "jo"}));
  REQUIRE(forced.status == 0);
  CHECK(forced.out.find(never) != std::string::npos);
  CHECK(forced.out.find(timed) != std::string::npos);
  CHECK(redis.cmd({"GET", "jo"}).at(0) == "3");
  CHECK(rlock(redis, pes({"inspect", "--type", "sem"})).out == "[]\n");
  CHECK(rlock(redis, with({"unlock", "--force", "none"})).status == 0);
  CHECK(redis.cmd_int({"EXISTS", "none", timeout_of("none")}) == 0);
}

TEST_CASE("redisson sem: a lost reply is repeated, and takes or gives back once") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  // The scripts are cached first: the lost request is the script itself.
  auto warm = rlock(redis, pes({"sem", "acquire", "--permits", "3", "warm"}));
  REQUIRE(warm.status == 0);
  const std::string warm_id = parse_json(warm.out)["permits"][0].get<std::string>();
  REQUIRE(rlock(redis, pes({"sem", "release", "warm", "--permit", warm_id})).status == 0);
  auto via = [&](std::vector<std::string> args) {
    args = pes(args);
    args.insert(args.begin(), {"--url", proxy.url()});
    return rlock_raw(args, {});
  };
  proxy.lose("{lr}", LossyProxy::Loss::kReply);
  auto taken = via({"sem", "acquire", "--permits", "3", "--count", "2", "lr"});
  INFO("stderr: " << taken.err);
  REQUIRE(taken.status == 0);
  CHECK(redis.cmd({"GET", "lr"}).at(0) == "1");
  CHECK(redis.cmd_int({"ZCARD", timeout_of("lr")}) == 2);
  const auto ids = parse_json(taken.out)["permits"];
  proxy.lose("{lr}", LossyProxy::Loss::kReply);
  auto released = via({"sem", "release", "lr", "--permit", ids[0].get<std::string>(), "--permit",
                       ids[1].get<std::string>()});
  REQUIRE(released.status == 0);
  CHECK(parse_json(released.out)["released"] == 2);
  CHECK(redis.cmd({"GET", "lr"}).at(0) == "3");
  CHECK(redis.cmd_int({"EXISTS", timeout_of("lr")}) == 0);
  CHECK(proxy.losses() == 2);
}

TEST_CASE("redisson sem: bad input is refused with one line, exit 64, nothing written") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> refused = {
      {"--redisson-object", "semaphore", "sem", "acquire", "--lease", "1s", "x"},
      {"--redisson-object", "lock", "sem", "status", "x"},
      {"sem", "acquire", "--permits", "1", "a{b}"},
      {"sem", "release", "x", "--permit", "xyz"},
      {"sem", "renew", "x", "--permit", "0g", "--lease", "1s"},
      {"sem", "acquire", "--permits", "0", "x"},
      {"sem", "acquire", "--permits", "1", "--note", "why", "x"},
      {"--redisson-object", "semaphore", "unlock", "--force", "x"},
      {"--redisson-object", "permit-expirable-semaphore", "unlock", "x", "--owner", "o"}};
  for (const auto& args : refused) {
    CAPTURE(args);
    auto r = rlock(redis, pes(args));
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

}  // namespace
}  // namespace rlock::test
