// --layout redisson --redisson-object read-write-lock against Redisson's own RReadWriteLock
// scripts, their Lua text run verbatim with redis-cli EVAL (tests/redisson/README says
// where they come from): exclusion both ways, wake-ups, shared re-entry counts, inspect and
// unlock --force of a lock only Java created, and what is refused. The faults are in
// redisson_rw_fault_test.cpp.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <thread>

#include "redisson_rw_helpers.hpp"

namespace rlock::test {
namespace {

using namespace redisson_rw;

TEST_CASE("redisson rw: rlock and Redisson's scripts exclude each other, readers share") {
  RedisServer redis;
  Java java{redis, "rw"};
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    // Java writes: rlock's writer and reader are busy.
    REQUIRE(taken(java.write_lock()));
    CHECK(rlock(redis, in_rw({"exec", "-n", "rw", "--", "true"})).status == 75);
    CHECK(rlock(redis, in_rw({"exec", "-n", "-s", "rw", "--", "true"})).status == 75);
    CHECK(java.write_unlock() == "1\n");
    // rlock writes: Java's reader and writer are busy, told the lease left.
    REQUIRE(rlock(redis, in_rw({"lock", "rw", "--owner", "cron", "--lease", "20s"})).status == 0);
    CHECK(std::stoll(java.read_lock()) > 15000);
    CHECK(std::stoll(java.write_lock()) > 15000);
    REQUIRE(rlock(redis, in_rw({"unlock", "rw", "--owner", "cron"})).status == 0);
    CHECK(redis.cmd_int({"EXISTS", "rw"}) == 0);
    // rlock reads: Java's writer is busy, Java's reader shares; and the other way round.
    REQUIRE(rlock(redis, in_rw({"lock", "-s", "rw", "--owner", "cron"})).status == 0);
    CHECK(std::stoll(java.write_lock()) > 0);
    CHECK(taken(java.read_lock()));
    CHECK(rlock(redis, in_rw({"exec", "-n", "rw", "--", "true"})).status == 75);
    CHECK(rlock(redis, in_rw({"exec", "-n", "-s", "rw", "--", "true"})).status == 0);
    CHECK(java.read_unlock() == "0\n");  // rlock's reader still holds it
    REQUIRE(rlock(redis, in_rw({"unlock", "-s", "rw", "--owner", "cron"})).status == 0);
    CHECK(redis.cmd_int({"EXISTS", "rw"}) == 0);
  }
  // A reader held by rlock with the Redisson hash it must have.
  REQUIRE(rlock(redis, in_rw({"lock", "-s", "rw", "--owner", "cron"})).status == 0);
  auto hash = hash_of(redis, "rw");
  REQUIRE(hash.size() == 2);
  CHECK(hash.at("mode") == "read");
  for (const auto& [field, count] : hash.items()) {
    if (field == "mode") continue;
    CHECK(count == "1");
    CHECK(redis.cmd_int({"PTTL", "{rw}:" + field + ":rwlock_timeout:1"}) > 0);
  }
}

TEST_CASE("redisson rw: concurrent rlock writers and Redisson's writer never overlap") {
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  Java java{redis, "job"};
  // Java takes the write lock whenever it is free and holds it a moment, 20 times, while
  // rlock's writers queue for it; each side writes "+" and "-" around its hold.
  std::vector<Spawned> jobs;
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(
        spawn_rlock(redis, in_rw({"exec", "--wait", "30s", "--lease", "3s", "job", "--", "sh", "-c",
                                  "echo + >> " + log + "; sleep 0.01; echo - >> " + log})));
  }
  for (int i = 0; i < 20; ++i) {
    REQUIRE(poll_until([&] { return taken(java.write_lock()); }, 20s));
    append_file(log, "+\n");
    std::this_thread::sleep_for(5ms);  // the hold's length, not a synchronisation
    append_file(log, "-\n");
    REQUIRE(java.write_unlock() == "1\n");
  }
  for (auto& j : jobs) REQUIRE(j.wait(deadline(30s)).value_or(kStillRunning) == 0);
  std::string expected;
  for (int i = 0; i < 26; ++i) expected += "+\n-\n";
  CHECK(read_file(log) == expected);
  CHECK(redis.cmd_int({"EXISTS", "job"}) == 0);
}

// rlock's readers ("r+" ... "r-", overlapping one another) and Java's writer ("+" ... "-")
// over 20 rounds: no reader is inside while the writer is, and the readers did share.
TEST_CASE("redisson rw: concurrent rlock readers and Redisson's writer never overlap") {
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path().string() + "/log";
  write_file(log, "");
  Java java{redis, "readers"};
  std::vector<Spawned> jobs;
  for (int i = 0; i < 6; ++i) {
    jobs.push_back(spawn_rlock(
        redis, in_rw({"exec", "-s", "--wait", "30s", "--lease", "3s", "readers", "--", "sh", "-c",
                      "echo r+ >> " + log + "; sleep 0.05; echo r- >> " + log})));
  }
  for (int i = 0; i < 20; ++i) {
    REQUIRE(poll_until([&] { return taken(java.write_lock()); }, 20s));
    append_file(log, "+\n");
    append_file(log, "-\n");
    REQUIRE(java.write_unlock() == "1\n");
  }
  for (auto& j : jobs) REQUIRE(j.wait(deadline(30s)).value_or(kStillRunning) == 0);
  int inside = 0, most = 0, writes = 0;
  bool writing = false;
  std::istringstream lines(read_file(log));
  for (std::string line; std::getline(lines, line);) {
    if (line == "r+") {
      CHECK_FALSE(writing);
      most = std::max(most, ++inside);
    } else if (line == "r-") {
      --inside;
    } else if (line == "+") {
      CHECK(inside == 0);
      writing = true;
      ++writes;
    } else {
      writing = false;
    }
  }
  CHECK(inside == 0);
  CHECK(writes == 20);
  MESSAGE("most rlock readers inside at once: " << most);
  CHECK(redis.cmd_int({"EXISTS", "readers"}) == 0);
}

TEST_CASE("redisson rw: each side's release wakes the other side's waiter") {
  RedisServer redis;
  Java java{redis, "wake"};
  const std::string channel = channel_of("wake");
  // Java's write unlock ("1", classic PUBLISH) starts a waiting rlock writer's job.
  REQUIRE(taken(java.write_lock()));
  auto job = spawn_rlock(redis, in_rw({"exec", "--wait", "20s", "wake", "--", "date", "+%s%3N"}));
  REQUIRE(poll_until([&] { return subscribers(redis, channel) == 1; }, 10s));
  long long released = epoch_ms();
  CHECK(java.write_unlock() == "1\n");
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  long long took = std::stoll(job.out()) - released;
  MESSAGE("Redisson's write unlock (PUBLISH) -> rlock exec's job starts: " << took << " ms");
  CHECK(took < 1000);

  // Java's read unlock with SPUBLISH (its sharded mode) wakes a waiting rlock writer.
  REQUIRE(taken(java.read_lock()));
  job = spawn_rlock(redis, in_rw({"exec", "--wait", "20s", "wake", "--", "date", "+%s%3N"}));
  REQUIRE(poll_until([&] { return subscribers(redis, channel) == 1; }, 10s));
  released = epoch_ms();
  CHECK(java.read_unlock("spublish") == "1\n");
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  took = std::stoll(job.out()) - released;
  MESSAGE("Redisson's read unlock (SPUBLISH) -> rlock exec's job starts: " << took << " ms");
  CHECK(took < 1000);

  // rlock's releases publish what Redisson's unlocks publish: "1" for the write lock, "0"
  // for the last read lock, heard by a Java waiter's SUBSCRIBE and SSUBSCRIBE alike.
  for (const std::string how : {"SUBSCRIBE", "SSUBSCRIBE"}) {
    CAPTURE(how);
    const std::string publish = how == "SUBSCRIBE" ? "publish" : "spublish";
    Listener waiter(redis, "wake", how);
    REQUIRE(rlock(redis, in_rw({"lock", "wake", "--owner", "o", "--lease", "30s"})).status == 0);
    released = epoch_ms();
    REQUIRE(rlock(redis, in_rw({"unlock", "wake", "--owner", "o"})).status == 0);
    CHECK(waiter.next() == "1");
    MESSAGE(how << ": rlock unlock (write) -> Redisson's channel: " << epoch_ms() - released
                << " ms, process start included");
    CHECK(taken(java.write_lock()));  // what a woken Java writer does: it gets it
    CHECK(java.write_unlock(publish) == "1\n");
    CHECK(waiter.next() == "1");
    REQUIRE(rlock(redis, in_rw({"lock", "-s", "wake", "--owner", "o"})).status == 0);
    REQUIRE(rlock(redis, in_rw({"unlock", "-s", "wake", "--owner", "o"})).status == 0);
    CHECK(waiter.next() == "0");
  }
}

TEST_CASE("redisson rw: re-entry counts are shared with Java") {
  RedisServer redis;
  Java java{redis, "re"};
  // Readers: rlock with Java's own field re-enters Java's read lock, and back.
  REQUIRE(taken(java.read_lock()));
  auto held = rlock(redis, in_rw({"lock", "-s", "re", "--owner", kJava}));
  REQUIRE(held.status == 0);
  CHECK(parse_json(held.out)["count"] == 2);
  CHECK(hash_of(redis, "re") == json::object({{"mode", "read"}, {kJava, "2"}}));
  CHECK(redis.cmd_int({"EXISTS", "{re}:" + kJava + ":rwlock_timeout:2"}) == 1);
  auto down = rlock(redis, in_rw({"unlock", "-s", "re", "--owner", kJava}));
  CHECK(parse_json(down.out)["count"] == 1);
  CHECK(redis.cmd_int({"EXISTS", "{re}:" + kJava + ":rwlock_timeout:2"}) == 0);
  CHECK(java.read_unlock() == "1\n");
  CHECK(redis.cmd_int({"EXISTS", "re"}) == 0);
  // The writer: the same field plus ":write", and a reader inside it (Redisson lets its
  // writer read).
  REQUIRE(taken(java.write_lock()));
  held = rlock(redis, in_rw({"lock", "re", "--owner", kJava}));
  REQUIRE(held.status == 0);
  CHECK(parse_json(held.out)["count"] == 2);
  CHECK(rlock(redis, in_rw({"lock", "-s", "re", "--owner", kJava})).status == 0);
  CHECK(hash_of(redis, "re") ==
        json::object({{"mode", "write"}, {kJava + ":write", "2"}, {kJava, "1"}}));
  CHECK(java.write_unlock() == "0\n");
  CHECK(rlock(redis, in_rw({"unlock", "re", "--owner", kJava})).status == 0);
  // The writer's own read hold remains: mode read, as Redisson leaves it.
  CHECK(hash_of(redis, "re") == json::object({{"mode", "read"}, {kJava, "1"}}));
  CHECK(java.read_unlock() == "1\n");
  CHECK(redis.cmd_int({"EXISTS", "re"}) == 0);
}

TEST_CASE("redisson rw: inspect and unlock --force see a lock only Java created") {
  RedisServer redis;
  Java a{redis, "java-only"}, b{redis, "java-only", kJava2};
  REQUIRE(taken(a.read_lock()));
  REQUIRE(taken(a.read_lock()));
  REQUIRE(taken(b.read_lock()));
  // Plain --layout redisson: no --redisson-object needed to see or clear it.
  const std::vector<std::string> layout = {"--layout", "redisson"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), layout.begin(), layout.end());
    return args;
  };
  auto listed = parse_json(rlock(redis, with({"inspect"})).out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["mode"] == "shared");
  CHECK(listed[0]["holders_total"] == 2);
  std::map<std::string, long long> counts;
  for (const auto& h : listed[0]["holders"]) {
    CHECK(h["shared"] == true);
    counts[h["owner"]] = h["count"];
  }
  CHECK(counts == std::map<std::string, long long>{{kJava, 2}, {kJava2, 1}});
  {
    Listener waiter(redis, "java-only");
    auto forced = rlock(redis, with({"unlock", "--force", "java-only"}));
    REQUIRE_MESSAGE(forced.status == 0, forced.err);
    CHECK(parse_json(forced.out)["holders"].size() == 2);
    CHECK(waiter.next() == "0");  // RedissonReadLock.forceUnlock's message
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);  // the read holds' lease keys went with it

  REQUIRE(taken(a.write_lock()));
  listed = parse_json(rlock(redis, with({"inspect"})).out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["mode"] == "exclusive");
  CHECK(listed[0]["holders"].size() == 1);
  CHECK(listed[0]["holders"][0]["owner"] == kJava);
  CHECK(listed[0]["holders"][0]["shared"] == false);
  Listener waiter(redis, "java-only", "SSUBSCRIBE");
  REQUIRE(rlock(redis, with({"unlock", "--force", "java-only"})).status == 0);
  CHECK(waiter.next() == "1");  // RedissonWriteLock.forceUnlock's message
  CHECK(redis.cmd_int({"EXISTS", "java-only"}) == 0);
}

// A job that asks for the lock its own exec holds would wait for itself: refused at once.
TEST_CASE("redisson rw: a request inside the exec that holds the lock is refused, exit 65") {
  RedisServer redis;
  const Env env = {{"RLOCK_URL", redis.topology_url()},
                   {"RLOCK_LAYOUT", "redisson"},
                   {"RLOCK_REDISSON_OBJECT", "read-write-lock"}};
  for (const char* outer : {"-s", "--wait=0"}) {
    CAPTURE(outer);
    auto r = rlock(redis,
                   {"exec", outer, "self", "--", "sh", "-c",
                    "exec " + rlock_binary() + " exec --wait 10s self -- true"},
                   env);
    CHECK(r.status == 65);
    CHECK(r.err.find("would wait for itself") != std::string::npos);
  }
  CHECK(redis.cmd_int({"EXISTS", "self"}) == 0);
}

TEST_CASE("redisson rw: bad input is refused with one line, nothing written") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> refused = {
      in_rw({"lock", "x", "--owner", "o", "--note", "hi"}),
      in_rw({"lock", "x", "--owner", "o", "--priority", "3", "--wait", "1s"}),
      in_rw({"lock", "--one-of", "x", "y", "--owner", "o"}),
      in_rw({"exec", "--min-hold", "5s", "x", "--", "true"}),
      in_rw({"exec", "--once-per", "1h", "x", "--", "true"}),
      in_rw({"lock", "a{b}", "--owner", "o"}),
      {"--layout", "redisson", "--redisson-object", "lock", "lock", "-s", "x", "--owner", "o"},
      {"--redisson-object", "read-write-lock", "lock", "x", "--owner", "o"}};
  for (const auto& args : refused) {
    CAPTURE(args);
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
  // Another program's hash under the name is not taken over (Java's RLock, here).
  redis.cmd({"HSET", "x", kJava, "1"});
  CHECK(rlock(redis, in_rw({"lock", "-s", "x", "--owner", "o"})).status == 75);
  CHECK(hash_of(redis, "x") == json::object({{kJava, "1"}}));
  redis.cmd({"HSET", "y", "mode", "other"});
  CHECK(rlock(redis, in_rw({"lock", "y", "--owner", "o"})).status == 65);
}

}  // namespace
}  // namespace rlock::test
