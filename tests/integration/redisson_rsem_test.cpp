// --layout redisson --redisson-object semaphore (`sem exec` only) against Redisson's own
// RSemaphore scripts (tests/redisson/redisson_rsem_*.lua, verbatim) run by
// tests/redisson/sem_peer.js as RedissonSemaphore.acquire() runs them: one free count for
// both sides, each side's release waking the other's waiter on redisson_sc:{NAME}, and
// permits that never expire (a stopped rlock keeps them; Java waits).
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "harness.hpp"
#include "lossy_proxy.hpp"
#include "redisson_scripts.hpp"

namespace rlock::test {
namespace {

using redisson::epoch_ms;
using redisson::kPeerDir;

bool peer_installed() { return redisson::peers_installed("ioredis"); }

Spawned java(const RedisServer& redis, const std::string& name, std::vector<std::string> args,
             bool sharded = false) {
  return redisson::sem_peer(redis, name, std::move(args), sharded);
}

std::vector<std::string> rsem(std::vector<std::string> args) {
  args.insert(args.begin(), {"--layout", "redisson", "--redisson-object", "semaphore"});
  return args;
}

// A fifo a job blocks on ("read x < FIFO") until the test opens it: the test decides when
// the job ends.
std::string make_fifo(const TempDir& dir) {
  const std::string path = dir.path().string() + "/go";
  REQUIRE(run({"mkfifo", path}).status == 0);
  return path;
}

long long stamp(const std::optional<std::string>& line) {
  REQUIRE(line.has_value());
  return std::stoll(line->substr(line->find(' ') + 1));
}

TEST_CASE("redisson rsem: 2 permits shared by 2 rlock execs and 2 Java clients over 60 holds") {
  REQUIRE(peer_installed());
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  REQUIRE(java(redis, "rc", {"rset", "2"}).wait(deadline(10s)) == std::optional<int>(0));
  Spawned j1 = java(redis, "rc", {"rrounds", "15", log});
  Spawned j2 = java(redis, "rc", {"rrounds", "15", log});
  for (int i = 0; i < 15; ++i) {
    const std::vector<std::string> args = {"sem",
                                           "exec",
                                           "--permits",
                                           "2",
                                           "--wait",
                                           "30s",
                                           "rc",
                                           "--",
                                           "sh",
                                           "-c",
                                           "echo + >> " + log + "; sleep 0.005; echo - >> " + log};
    Spawned a = spawn_rlock(redis, rsem(args));
    Spawned b = spawn_rlock(redis, rsem(args));
    REQUIRE(a.wait(deadline(30s)).value_or(kStillRunning) == 0);
    REQUIRE(b.wait(deadline(30s)).value_or(kStillRunning) == 0);
  }
  REQUIRE(j1.wait(deadline(30s)).value_or(kStillRunning) == 0);
  REQUIRE(j2.wait(deadline(30s)).value_or(kStillRunning) == 0);
  const std::string text = read_file(log);
  int open = 0, most = 0, total = 0;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    total += text[i] == '+';
    open += text[i] == '+' ? 1 : -1;
    most = std::max(most, open);
  }
  MESSAGE("most holds at once: " << most);
  CHECK(total == 60);
  CHECK(most <= 2);
  CHECK(redis.cmd({"GET", "rc"}).at(0) == "2");
}

TEST_CASE("redisson rsem: each side's release wakes the other side's waiter at once") {
  REQUIRE(peer_installed());
  for (bool sharded : {false, true}) {
    CAPTURE(sharded);
    RedisServer redis;
    TempDir dir;
    const std::string go = make_fifo(dir);
    const std::string name = sharded ? "rws" : "rwc";
    REQUIRE(java(redis, name, {"rset", "1"}).wait(deadline(10s)) == std::optional<int>(0));
    auto holder = spawn_rlock(redis, rsem({"sem", "exec", "--permits", "1", name, "--", "sh", "-c",
                                           "echo started; read x < " + go + "; date +%s%3N"}));
    REQUIRE(holder.read_line(deadline(10s)) == "started");
    Spawned j = java(redis, name, {"rwait", "300"}, sharded);
    REQUIRE(j.read_line(deadline(10s)) == "busy");
    write_file(go, "\n");
    auto end_line = holder.read_line(deadline(10s));
    REQUIRE(end_line.has_value());
    const long long job_end = std::stoll(*end_line);
    const long long java_at = stamp(j.read_line(deadline(10s)));
    auto r = spawn_rlock(redis, rsem({"sem", "exec", "--permits", "1", "--wait", "20s", name, "--",
                                      "date", "+%s%3N"}));
    const long long java_released = stamp(j.read_line(deadline(10s)));
    REQUIRE(holder.wait(deadline(10s)).value_or(kStillRunning) == 0);
    REQUIRE(r.wait(deadline(20s)).value_or(kStillRunning) == 0);
    const long long rlock_at = std::stoll(r.out());
    MESSAGE((sharded ? "sharded: " : "classic: ")
            << "rlock exec's job ends -> Java waiter holds: " << java_at - job_end << " ms");
    MESSAGE((sharded ? "sharded: " : "classic: ")
            << "Java release -> rlock exec job starts: " << rlock_at - java_released << " ms");
    CHECK(java_at - job_end < 1000);
    CHECK(rlock_at >= java_released);
    CHECK(rlock_at - java_released < 1000);
    REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
    CHECK(redis.cmd({"GET", name}).at(0) == "1");
  }
}

TEST_CASE("redisson rsem: a SIGSTOPped rlock keeps its permit (no expiry): Java waits") {
  REQUIRE(peer_installed());
  RedisServer redis;
  auto job = spawn_rlock(redis, rsem({"sem", "exec", "--permits", "1", "--lease", "1s", "rst", "--",
                                      "sh", "-c", "echo $$; exec sleep 60"}));
  auto line = job.read_line(deadline(10s));
  REQUIRE(line.has_value());
  PidGuard child(static_cast<pid_t>(std::stol(*line)));
  job.kill(SIGSTOP);
  Spawned j = java(redis, "rst", {"rwait", "0"});
  REQUIRE(j.read_line(deadline(10s)) == "busy");
  // Three of the lease rlock was given: nothing on the server takes the permit back.
  CHECK_FALSE(j.read_line(deadline(3s)).has_value());
  CHECK_FALSE(child.wait_gone(0ms));
  CHECK(redis.cmd({"GET", "rst"}).at(0) == "0");
  job.kill(SIGCONT);
  job.kill(SIGTERM);
  CHECK(job.wait(deadline(10s)).has_value());
  REQUIRE(j.read_line(deadline(10s)).has_value());  // acquired once the job ended
  REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("redisson rsem: a lost reply takes and gives back once") {
  RedisServer redis;
  TempDir dir;
  const std::string go = make_fifo(dir);
  LossyProxy proxy(redis.port());
  // The scripts are cached first: the lost request is the script itself.
  REQUIRE(rlock(redis, rsem({"sem", "exec", "--permits", "3", "warm", "--", "true"})).status == 0);
  std::vector<std::string> args = rsem({"sem", "exec", "--permits", "3", "--count", "2", "lr", "--",
                                        "sh", "-c", "echo started; read x < " + go});
  args.insert(args.begin(), {rlock_binary(), "--url", proxy.url()});
  proxy.lose("{lr}", LossyProxy::Loss::kReply);
  Spawned job(args);
  REQUIRE(job.read_line(deadline(10s)) == "started");
  CHECK(redis.cmd({"GET", "lr"}).at(0) == "1");
  proxy.lose("{lr}", LossyProxy::Loss::kReply);
  write_file(go, "\n");
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(redis.cmd({"GET", "lr"}).at(0) == "3");
  CHECK(proxy.losses() == 2);
}

TEST_CASE(
    "redisson rsem: what RSemaphore cannot do is refused, one line, exit 64, nothing written") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> refused = {
      {"sem", "acquire", "--permits", "1", "x"},
      {"sem", "release", "x", "--force"},
      {"sem", "renew", "x", "--permit", "00", "--lease", "1s"},
      {"sem", "status", "x"},
      {"sem", "exec", "--permits", "1", "--resize", "x", "--", "true"},
      {"sem", "exec", "--permits", "1", "--note", "n", "x", "--", "true"},
      {"unlock", "--force", "x"}};
  for (const auto& args : refused) {
    CAPTURE(args);
    auto r = rlock(redis, rsem(args));
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

}  // namespace
}  // namespace rlock::test
