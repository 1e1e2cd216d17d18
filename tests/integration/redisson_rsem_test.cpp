// --layout redisson --redisson-object semaphore (`sem exec`, `acquire`, `release`,
// `status`, `inspect --type sem`) against Redisson's own RSemaphore scripts
// (tests/redisson/redisson_rsem_*.lua, verbatim) run by tests/redisson/sem_peer.js as
// RedissonSemaphore.acquire() runs them: one free count for both sides, each side's release
// waking the other's waiter on redisson_sc:{NAME}, and permits that never expire (a stopped
// rlock keeps them; Java waits).
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

// A log of "+" (a hold began) and "-" (it ended) lines: `holds` holds, never more than
// `permits` at once.
void check_holds(const std::string& text, int holds, int permits) {
  int open = 0, most = 0, total = 0;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    total += text[i] == '+';
    open += text[i] == '+' ? 1 : -1;
    most = std::max(most, open);
  }
  MESSAGE("most holds at once: " << most);
  CHECK(total == holds);
  CHECK(most <= permits);
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
  check_holds(read_file(log), 60, 2);
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

// `cmd`'s argv run by sh, with the epoch ms before it starts and after it ends on stdout
// around its own output.
Spawned timed(const std::vector<std::string>& argv) {
  std::vector<std::string> sh = {"sh", "-c", "date +%s%3N; \"$@\"; s=$?; date +%s%3N; exit $s",
                                 "sh"};
  sh.insert(sh.end(), argv.begin(), argv.end());
  return Spawned(sh);
}

TEST_CASE("redisson rsem: sem acquire takes what Java's verbatim tryAcquire then misses") {
  RedisServer redis;
  CHECK(parse_json(rlock(redis, rsem({"sem", "status", "ta"})).out) ==
        json::parse(R"({"name":"ta","exists":false,"capacity":null,"in_use":null,"free":0})"));
  // Never set and no --permits: none free, as Java's tryAcquire reads it; nothing written.
  auto none = rlock(redis, rsem({"sem", "acquire", "ta"}));
  CHECK(none.status == 75);
  CHECK(parse_json(none.out) ==
        json::parse(R"({"name":"ta","acquired":false,"count":1,"free":0})"));
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
  CHECK(redisson::eval(redis, "redisson_rsem_try_set_permits.lua", {"ta", "redisson_sc:{ta}"},
                       {"3", "publish"}) == "1\n");
  auto took = rlock(redis, rsem({"sem", "acquire", "--count", "2", "ta"}));
  REQUIRE(took.status == 0);
  CHECK(parse_json(took.out) == json::parse(R"({"name":"ta","acquired":true,"count":2,"free":1})"));
  CHECK(redisson::eval(redis, "redisson_rsem_try_acquire.lua", {"ta"}, {"2"}) == "0\n");
  CHECK(redisson::eval(redis, "redisson_rsem_try_acquire.lua", {"ta"}, {"1"}) == "1\n");
  CHECK(redis.cmd({"GET", "ta"}).at(0) == "0");
  CHECK(parse_json(rlock(redis, rsem({"sem", "status", "ta"})).out)["free"] == 0);
  CHECK(rlock(redis, rsem({"sem", "acquire", "ta"})).status == 75);
  auto back = rlock(redis, rsem({"sem", "release", "ta", "--count", "3"}));
  REQUIRE(back.status == 0);
  CHECK(parse_json(back.out) == json::parse(R"({"name":"ta","released":3,"free":3})"));
  CHECK(parse_json(rlock(redis, rsem({"sem", "status", "ta"})).out) ==
        json::parse(R"({"name":"ta","exists":true,"capacity":null,"in_use":null,"free":3})"));
  // --permits sets one never set (trySetPermits) and is ignored once set.
  CHECK(parse_json(rlock(redis, rsem({"sem", "acquire", "--permits", "5", "tb"})).out)["free"] ==
        4);
  CHECK(parse_json(rlock(redis, rsem({"sem", "acquire", "--permits", "9", "tb"})).out)["free"] ==
        3);
}

TEST_CASE("redisson rsem: a Java release wakes a waiting sem acquire, an rlock release Java") {
  REQUIRE(peer_installed());
  for (bool sharded : {false, true}) {
    CAPTURE(sharded);
    RedisServer redis;
    const std::string name = sharded ? "wks" : "wkc";
    REQUIRE(java(redis, name, {"rset", "1"}).wait(deadline(10s)) == std::optional<int>(0));
    Spawned j = java(redis, name, {"rwait", "1500"}, sharded);
    REQUIRE(j.read_line(deadline(10s)).value_or("").rfind("acquired", 0) == 0);
    Spawned r = timed(rlock_argv(redis, rsem({"-v", "sem", "acquire", "--wait", "20s", name})));
    // -v says so before the wait sleeps, subscribed: Java's release comes after it.
    bool waiting = false;
    while (!waiting) {
      auto line = r.read_err_line(deadline(10s));
      REQUIRE(line.has_value());
      waiting = line->find("waiting for semaphore") != std::string::npos;
    }
    const long long java_released = stamp(j.read_line(deadline(10s)));
    REQUIRE(r.wait(deadline(20s)).value_or(kStillRunning) == 0);
    auto lines = lines_of(r.out());
    REQUIRE(lines.size() == 3);
    CHECK(lines[1] ==
          json::parse(R"({"acquired":true,"count":1,"free":0,"name":")" + name + "\"}"));
    const long long rlock_done = lines[2].get<long long>();
    MESSAGE((sharded ? "sharded: " : "classic: ")
            << "Java release -> rlock sem acquire done: " << rlock_done - java_released << " ms");
    CHECK(rlock_done >= java_released);
    CHECK(rlock_done - java_released < 100);
    REQUIRE(j.wait(deadline(10s)).value_or(kStillRunning) == 0);

    // Now Java waits: rlock's release is Redisson's message, and wakes it.
    redisson::ChannelListener listener(redis, "redisson_sc:{" + name + "}",
                                       sharded ? "SSUBSCRIBE" : "SUBSCRIBE");
    Spawned w = java(redis, name, {"rwait", "0"}, sharded);
    REQUIRE(w.read_line(deadline(10s)) == "busy");
    Spawned rel = timed(rlock_argv(redis, rsem({"sem", "release", name})));
    const long long java_at = stamp(w.read_line(deadline(10s)));
    REQUIRE(rel.wait(deadline(10s)).value_or(kStillRunning) == 0);
    const long long release_start = lines_of(rel.out()).at(0).get<long long>();
    CHECK(listener.next() == "1");  // the new free count, as Redisson's release publishes it
    MESSAGE((sharded ? "sharded: " : "classic: ")
            << "rlock sem release start -> Java waiter holds: " << java_at - release_start
            << " ms");
    CHECK(java_at - release_start < 100);
    REQUIRE(w.wait(deadline(10s)).value_or(kStillRunning) == 0);
    CHECK(redis.cmd({"GET", name}).at(0) == "1");
  }
}

TEST_CASE("redisson rsem: inspect --type sem lists RSemaphores, also ones only Java set") {
  RedisServer redis;
  CHECK(redisson::eval(redis, "redisson_rsem_try_set_permits.lua", {"jonly", "redisson_sc:{jonly}"},
                       {"4", "publish"}) == "1\n");
  REQUIRE(rlock(redis, rsem({"sem", "acquire", "--permits", "2", "mine"})).status == 0);
  redis.cmd({"SET", "greeting", "hello"});  // a string that is no count: not an RSemaphore
  auto r = rlock(redis, rsem({"inspect", "--type", "sem"}));
  REQUIRE(r.status == 0);
  auto listed = parse_json(r.out);
  std::sort(listed.begin(), listed.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });
  CHECK(listed == json::parse(R"([
    {"type":"sem","name":"jonly","key":"jonly","capacity":null,"free":4,"permits":[],
     "permits_total":null,"waiters":[],"waiters_total":null},
    {"type":"sem","name":"mine","key":"mine","capacity":null,"free":1,"permits":[],
     "permits_total":null,"waiters":[],"waiters_total":null}])"));
  // Without the flag a bare count is no semaphore (RPermitExpirableSemaphore's are zsets).
  auto pes = rlock(redis, {"--layout", "redisson", "inspect", "--type", "sem"});
  REQUIRE(pes.status == 0);
  CHECK(parse_json(pes.out) == json::array());
}

TEST_CASE("redisson rsem: 2 permits over 60 holds of rlock acquire/release and Java") {
  REQUIRE(peer_installed());
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  REQUIRE(java(redis, "mix", {"rset", "2"}).wait(deadline(10s)) == std::optional<int>(0));
  Spawned j1 = java(redis, "mix", {"rrounds", "15", log});
  Spawned j2 = java(redis, "mix", {"rrounds", "15", log});
  auto quoted = [](const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += "'" + a + "' ";
    return out;
  };
  const std::string take =
      quoted(rlock_argv(redis, rsem({"sem", "acquire", "--wait", "30s", "mix"})));
  const std::string give = quoted(rlock_argv(redis, rsem({"sem", "release", "mix"})));
  const std::string loop = "for i in $(seq 15); do " + take + ">/dev/null || exit 1; echo + >> " +
                           log + "; sleep 0.005; echo - >> " + log + "; " + give +
                           ">/dev/null || exit 1; done";
  Spawned a({"sh", "-c", loop});
  Spawned b({"sh", "-c", loop});
  REQUIRE(a.wait(deadline(60s)).value_or(kStillRunning) == 0);
  REQUIRE(b.wait(deadline(60s)).value_or(kStillRunning) == 0);
  REQUIRE(j1.wait(deadline(30s)).value_or(kStillRunning) == 0);
  REQUIRE(j2.wait(deadline(30s)).value_or(kStillRunning) == 0);
  check_holds(read_file(log), 60, 2);
  CHECK(redis.cmd({"GET", "mix"}).at(0) == "2");
}

TEST_CASE("redisson rsem: a lost reply of sem acquire and of sem release takes and gives once") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  // The scripts are cached first: the lost request is the script itself.
  REQUIRE(rlock(redis, rsem({"sem", "acquire", "--permits", "3", "warm"})).status == 0);
  REQUIRE(rlock(redis, rsem({"sem", "release", "warm"})).status == 0);
  auto via_proxy = [&](std::vector<std::string> args) {
    args = rsem(args);
    args.insert(args.begin(), {"--url", proxy.url()});
    return rlock_raw(args);
  };
  proxy.lose("{lq}", LossyProxy::Loss::kReply);
  auto took = via_proxy({"sem", "acquire", "--permits", "3", "--count", "2", "lq"});
  REQUIRE(took.status == 0);
  CHECK(parse_json(took.out)["free"] == 1);
  CHECK(redis.cmd({"GET", "lq"}).at(0) == "1");
  proxy.lose("{lq}", LossyProxy::Loss::kReply);
  auto back = via_proxy({"sem", "release", "--count", "2", "lq"});
  REQUIRE(back.status == 0);
  CHECK(parse_json(back.out)["free"] == 3);
  CHECK(redis.cmd({"GET", "lq"}).at(0) == "3");
  CHECK(proxy.losses() == 2);
}

TEST_CASE(
    "redisson rsem: what RSemaphore has nothing for is refused, one line, exit 64, nothing "
    "written") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> refused = {
      {"sem", "acquire", "--lease", "30s", "x"},
      {"sem", "acquire", "--count", "0", "x"},
      {"sem", "acquire", "--count", "two", "x"},
      {"sem", "acquire", "--permits", "1", "--count", "2", "x"},
      {"sem", "acquire", "--permits", "1", "--resize", "x"},
      {"sem", "acquire", "x{y}"},
      {"sem", "release", "x", "--force"},
      {"sem", "release", "x", "--permit", "00"},
      {"sem", "release", "x", "--count", "0"},
      {"sem", "release", "x", "--count", "10001"},
      {"sem", "renew", "x", "--permit", "00", "--lease", "1s"},
      {"sem", "status", "x", "--limit", "3"},
      {"sem", "exec", "--permits", "1", "--resize", "x", "--", "true"},
      {"sem", "exec", "--permits", "1", "--note", "n", "x", "--", "true"},
      {"unlock", "--force", "x"},
      {"unlock", "x", "--owner", "o"}};
  for (const auto& args : refused) {
    CAPTURE(args);
    auto r = rlock(redis, rsem(args));
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  // --count gives back anonymous permits: rlock's and RPermitExpirableSemaphore's are named.
  for (const std::vector<std::string>& layout :
       {std::vector<std::string>{}, std::vector<std::string>{"--layout", "redisson"}}) {
    auto args = layout;
    for (const char* a : {"sem", "release", "x", "--count", "1"}) args.push_back(a);
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

}  // namespace
}  // namespace rlock::test
