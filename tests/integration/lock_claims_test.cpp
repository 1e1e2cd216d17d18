// Claims of granted locks and the tokens they carry: a claim counts only while its own
// reservation is in force, every hold that can write carries a token newer than any earlier
// holder's; the same-owner rules of shared holds; and a lock's scripts cost the same beside
// any number of readers.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "harness.hpp"

namespace rlock::test {
namespace {

bool queued(const RedisServer& redis, const std::string& name, long long n) {
  return poll_until(
      [&] {
        return redis.on_majority({"ZCARD", lock_key(name) + ":waiters"}) == n;
      },
      10s);
}

bool saw_line(Spawned& proc, const std::string& want) {
  const auto until = deadline(15s);
  while (auto line = proc.read_line(until)) {
    if (*line == want) return true;
  }
  return false;
}

// A job that appends "<tag>-in" to `log`, stays `secs`, and appends "<tag>-out".
std::vector<std::string> logged_job(const std::string& tag, const std::string& log,
                                    const std::string& secs) {
  return {"sh", "-c",
          "echo " + tag + "-in >> " + log + "; sleep " + secs + "; echo " + tag + "-out >> " + log};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// True when an inspect listing shows a lock held by a writer and a reader at once.
bool writer_beside_reader(const json& listing) {
  for (const auto& lock : listing) {
    bool writer = false, reader = false;
    for (const auto& h : lock.at("holders")) (h.value("shared", false) ? reader : writer) = true;
    if (writer && reader) return true;
  }
  return false;
}

TEST_CASE("claims: a reader whose claim window lapsed never claims beside a granted writer") {
  RedisServer redis;
  TempDir dir;
  const std::string log = dir / "log";
  REQUIRE(rlock(redis, {"lock", "L", "--owner", "x", "--lease", "60s"}).status == 0);
  auto r1 = spawn_rlock(
      redis, concat({"exec", "--shared", "--wait", "60s", "L", "--"}, logged_job("r", log, "1")));
  REQUIRE(queued(redis, "L", 1));
  r1.kill(SIGSTOP);
  auto w1 = spawn_rlock(redis, {"lock", "L", "--owner", "w1", "--wait", "1.2s"});
  REQUIRE(queued(redis, "L", 2));
  auto r4 = spawn_rlock(
      redis, {"lock", "--shared", "L", "--owner", "r4", "--lease", "2s", "--wait", "30s"});
  REQUIRE(queued(redis, "L", 3));
  REQUIRE(rlock(redis, {"unlock", "L", "--owner", "x"}).status == 0);  // granted to stopped R1
  const auto unlocked = Clock::now();
  CHECK(w1.wait(deadline(10s)).value_or(kStillRunning) == 75);  // R4 heads the queue now
  std::this_thread::sleep_until(unlocked + 1s);
  // A newcomer's attempt passes the free lock on to R4 (R1's reservation still counts).
  CHECK(rlock(redis, {"lock", "--shared", "-n", "L", "--owner", "r5"}).status == 75);
  REQUIRE(r4.wait(deadline(10s)).value_or(kStillRunning) == 0);
  REQUIRE(rlock(redis, {"unlock", "-s", "L", "--owner", "r4"}).status == 0);
  auto w2 =
      spawn_rlock(redis, concat({"exec", "--wait", "60s", "L", "--"}, logged_job("w", log, "1")));
  REQUIRE(queued(redis, "L", 1));
  w2.kill(SIGSTOP);
  // R1's claim window (2s) has lapsed: resumed, it must find nothing to claim.
  std::this_thread::sleep_until(unlocked + 2600ms);
  r1.kill(SIGCONT);
  std::this_thread::sleep_for(300ms);
  w2.kill(SIGCONT);
  bool overlap_seen = false;
  const auto until = deadline(30s);
  while ((r1.running() || w2.running()) && Clock::now() < until) {
    auto listing = rlock(redis, {"inspect", "--type", "lock", "L"});
    if (listing.status == 0 && writer_beside_reader(parse_json(listing.out))) overlap_seen = true;
    std::this_thread::sleep_for(50ms);
  }
  CHECK(r1.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(w2.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK_FALSE(overlap_seen);
  // The writer was granted while R1 was stopped; R1 runs once it is done, never beside it.
  CHECK(read_file(log) == "w-in\nw-out\nr-in\nr-out\n");
}

TEST_CASE("claims: a grant whose reservation was released gives no fence and cuts no lease") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "L", "--owner", "A"}).status == 0);
  auto b = spawn_rlock(redis, {"lock", "L", "--owner", "B", "--wait", "20s", "--lease", "3s"});
  REQUIRE(queued(redis, "L", 1));
  b.kill(SIGSTOP);
  REQUIRE(rlock(redis, {"unlock", "L", "--owner", "A"}).status == 0);  // granted to stopped B
  REQUIRE(rlock(redis, {"unlock", "L", "--owner", "B"}).status == 0);  // drops the reservation
  auto c = rlock(redis, {"lock", "L", "--owner", "C", "--lease", "60s"});
  REQUIRE(c.status == 0);
  const auto c_fence = parse_json(c.out).at("fence").get<long long>();
  b.kill(SIGCONT);
  // B finds no reservation and queues again behind C, whose hold and lease are untouched.
  REQUIRE(queued(redis, "L", 1));
  CHECK(b.running());
  int held_by_c = 0;
  for (const RedisServer* m : redis.members())
    held_by_c += hash_of(*m, lock_key("L")) == json::object({{"C", "1"}});
  CHECK(held_by_c > static_cast<int>(redis.members().size()) / 2);
  CHECK(redis.on_majority({"PTTL", lock_key("L")}) > 50'000);
  REQUIRE(rlock(redis, {"unlock", "L", "--owner", "C"}).status == 0);
  REQUIRE(b.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto got = parse_json(b.out());
  CHECK(got.at("count") == 1);
  CHECK(got.at("fence").get<long long>() > c_fence);
}

TEST_CASE("claims: after unlock --force, a re-entry into a waiter's grant carries a new token") {
  RedisServer redis;
  auto a = rlock(redis, {"lock", "L", "--owner", "A"});
  REQUIRE(a.status == 0);
  const auto a_fence = parse_json(a.out).at("fence").get<long long>();
  auto b = spawn_rlock(redis, {"lock", "L", "--owner", "B", "--wait", "20s"});
  REQUIRE(queued(redis, "L", 1));
  b.kill(SIGSTOP);
  REQUIRE(rlock(redis, {"unlock", "--force", "L"}).status == 0);  // granted to stopped B
  auto again = rlock(redis, {"lock", "L", "--owner", "B"});
  REQUIRE(again.status == 0);
  const auto again_json = parse_json(again.out);
  CHECK(again_json.at("count") == 2);
  CHECK(again_json.at("fence").get<long long>() > a_fence);
  b.kill(SIGCONT);
  REQUIRE(b.wait(deadline(10s)).value_or(kStillRunning) == 0);
  // The waiter's claim is the same hold: the same token, not a second one.
  CHECK(parse_json(b.out()).at("fence") == again_json.at("fence"));
}

TEST_CASE("same owner: an exec --shared never runs inside a running exclusive exec") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "hold");
  const Env ci{{"RLOCK_OWNER", "ci"}};
  auto writer =
      spawn_rlock(redis, {"exec", "L", "--", "sh", "-c", "echo in; read x < " + fifo}, ci);
  REQUIRE(saw_line(writer, "in"));
  auto reader = rlock(redis, {"exec", "--shared", "-n", "L", "--", "echo", "reader ran"}, ci);
  CHECK(reader.status == 75);
  CHECK(reader.out.empty());
  CHECK(reader.err.find("another `rlock exec`") != std::string::npos);
  CHECK(line_count(reader.err) == 1);
  write_file(fifo, "go\n", 0600);
  CHECK(writer.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("same owner: exec --wait beside a sibling's exec --shared waits for it, then runs") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "hold");
  const Env ci{{"RLOCK_OWNER", "ci"}};
  auto reader = spawn_rlock(
      redis, {"exec", "--shared", "L", "--", "sh", "-c", "echo in; read x < " + fifo}, ci);
  REQUIRE(saw_line(reader, "in"));
  auto writer = spawn_rlock(redis, {"exec", "--wait", "20s", "L", "--", "echo", "writer ran"}, ci);
  REQUIRE(queued(redis, "L", 1));
  CHECK(writer.running());
  write_file(fifo, "go\n", 0600);
  CHECK(reader.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(writer.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(writer.out() == "writer ran\n");
}

TEST_CASE("same owner: lock --shared inside an exec --shared job is the owner's own hold") {
  RedisServer redis;
  const std::string script = R"("$RL" --url "$URL" lock --shared L)";
  auto job = rlock(redis, {"exec", "--shared", "L", "--", "sh", "-c", script},
                   {{"RLOCK_OWNER", "ci"}, {"RL", rlock_binary()}, {"URL", redis.topology_url()}});
  REQUIRE(job.status == 0);
  CHECK(parse_json(job.out).at("count") == 1);  // not a level of the job's hold
  // It outlives the job (whose own hold is gone) until the owner drops it.
  auto readers = hash_of(redis, "rlock:lock-readers:{L}");
  CHECK(keys_of(readers) == json::array({"ci"}));
  REQUIRE(rlock(redis, {"unlock", "-s", "L", "--owner", "ci"}).status == 0);
  CHECK(redis.cmd_int({"EXISTS", "rlock:lock-readers:{L}"}) == 0);
}

TEST_CASE("claims: beside 200,000 readers a shared lock stays fast and a busy reply small") {
  RedisServer redis;
  const std::string fill = R"(
    local t = redis.call('TIME')
    local at = string.format('%.0f', t[1] * 1000 + 600000)
    for i = 1, 200000 do
      redis.call('HSET', KEYS[1], 'r' .. i, '1:' .. at)
      redis.call('ZADD', KEYS[2], at, 'r' .. i)
    end
    redis.call('PEXPIRE', KEYS[1], 600000)
    redis.call('PEXPIRE', KEYS[2], 600000))";
  redis.cmd({"EVAL", fill, "2", "rlock:lock-readers:{big}", lock_key("big") + ":rexp"});
  redis.cmd({"CONFIG", "SET", "slowlog-log-slower-than", "100000"});  // 100 ms
  redis.cmd({"SLOWLOG", "RESET"});
  for (int i = 0; i < 3; ++i) {
    CHECK(rlock(redis, {"lock", "--shared", "-n", "big", "--owner", "s" + std::to_string(i)})
              .status == 0);
  }
  CHECK(rlock(redis, {"exec", "--shared", "-n", "big", "--", "true"}).status == 0);
  auto busy = rlock(redis, {"lock", "-n", "big", "--owner", "w"});
  CHECK(busy.status == 75);
  CHECK(busy.out.size() < 16 * 1024);
  auto j = parse_json(busy.out);
  CHECK(j.at("holders_total") == 200'003);
  CHECK(j.at("holders").size() <= 100);
  CHECK(rlock(redis, {"unlock", "-s", "big", "--owner", "s0"}).status == 0);
  INFO("slowlog: " << json(redis.cmd({"SLOWLOG", "GET", "10"})).dump());
  CHECK(redis.cmd_int({"SLOWLOG", "LEN"}) == 0);
}

TEST_CASE(
    "same owner: beside its lock hold, an exclusive exec never runs while its exec --shared "
    "does") {
  RedisServer redis;
  TempDir dir;
  auto fifo = make_fifo(dir, "hold");
  const Env ci{{"RLOCK_OWNER", "ci"}};
  REQUIRE(rlock(redis, {"lock", "L", "--lease", "5m"}, ci).status == 0);
  // The reader job runs beside the owner's exclusive lock hold (as exec re-enters it).
  auto reader = spawn_rlock(
      redis, {"exec", "--shared", "L", "--", "sh", "-c", "echo in; read x < " + fifo}, ci);
  REQUIRE(saw_line(reader, "in"));
  // An exclusive exec of the same owner must not re-enter the lock hold beside it.
  auto writer = rlock(redis, {"exec", "-n", "L", "--", "echo", "writer ran"}, ci);
  CHECK(writer.status == 75);
  CHECK(writer.out.empty());
  CHECK(hash_of(redis, lock_key("L")) == json::object({{"ci", "1"}}));
  CHECK(redis.cmd_int({"EXISTS", lock_key("L") + ":exec"}) == 0);
  // The owner's own lock still re-enters: it is a hold taken on purpose, not a job.
  CHECK(rlock(redis, {"lock", "L"}, ci).status == 0);
  write_file(fifo, "go\n", 0600);
  CHECK(reader.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

}  // namespace
}  // namespace rlock::test
