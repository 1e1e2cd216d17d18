// `rlock delay-pop` never loses what it takes: items written by other programs (ids that
// are not UTF-8, malformed metadata) are printed losslessly or dead-lettered with a reason,
// and a failed write to stdout puts the unprinted items back and exits 74.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "harness.hpp"
#include "reply_records.hpp"

namespace rlock::test {
namespace {

// Built by append, for the same reason.
std::string key_of(const std::string& queue, const char* suffix) {
  std::string key = "rlock:queue:{";
  key.append(queue).append("}").append(suffix);
  return key;
}

// An item written into the queue's keys as another program would (due long ago), with
// `meta` as its metadata ("" for the well-formed "<seq> <due> 0 0").
// The schedule's member of item `id`: its push sequence, zero-padded, then the id.
std::string member(long long seq, const std::string& id) {
  std::ostringstream s;
  s.width(16);
  s.fill('0');
  s << seq;
  return cat(s.str(), ":", id);
}

void plant(const RedisServer& redis, const std::string& queue, const std::string& id,
           const std::string& payload, long long seq, const std::string& meta = "") {
  redis.cmd({"HSET", key_of(queue, ""), "seq", std::to_string(seq)});
  redis.cmd({"ZADD", key_of(queue, ":sched"), std::to_string(1000 + seq), member(seq, id)});
  redis.cmd({"HSET", key_of(queue, ":items"), id, payload});
  redis.cmd({"HSET", key_of(queue, ":meta"), id,
             meta.empty() ? cat(member(seq, id).substr(0, 16), " ", 1000 + seq, " 0 0") : meta});
}

// A planted item moved to the dead letters, as --max-deliveries would have.
void plant_dead(const RedisServer& redis, const std::string& queue, const std::string& id,
                const std::string& payload, long long seq) {
  plant(redis, queue, id, payload, seq);
  redis.cmd({"ZREM", key_of(queue, ":sched"), member(seq, id)});
  redis.cmd({"RPUSH", key_of(queue, ":dead"), id});
}

// The stdout of a run that must succeed.
std::string ok_out(const RunResult& r) {
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

long long items_left(const RedisServer& redis, const std::string& queue) {
  return redis.cmd_int({"HLEN", key_of(queue, ":meta")});
}

// `rlock --url URL args... REDIRECT` through sh (the harness gives children pipes).
std::vector<std::string> to_file_argv(const std::vector<std::string>& args,
                                      const std::string& redirect, Env& env) {
  std::string cmd = "exec \"$RL\" --url \"$URL\"";
  for (size_t i = 0; i < args.size(); ++i) {
    cmd.append(" \"$A").append(std::to_string(i)).append("\"");
    env.emplace_back(cat("A", i), args[i]);
  }
  cmd.append(" ").append(redirect);
  return {"sh", "-c", cmd};
}

RunResult to_file(const RedisServer& redis, const std::vector<std::string>& args,
                  const std::string& redirect) {
  Env env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}};
  auto argv = to_file_argv(args, redirect, env);
  return run(argv, env);
}

TEST_CASE("delay-pop: an id that is not UTF-8 prints as id_base64, the batch whole") {
  RedisServer redis;
  plant(redis, "q", "ok-1", "first", 1);
  plant(redis, "q", std::string("\xff\xfe-id", 5), "second", 2);
  plant(redis, "q", "ok-3", std::string("\x80", 1), 3);
  auto r = rlock(redis, {"delay-pop", "q", "--count", "10"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto items = lines_of(r.out);
  REQUIRE(items.size() == 3);
  CHECK(items[0].at("id") == "ok-1");
  CHECK_FALSE(items[0].contains("id_base64"));
  CHECK(items[1].at("id").is_null());
  CHECK(items[1].at("id_base64") == "//4taWQ=");
  CHECK(items[1].at("payload") == "second");
  CHECK(items[2].at("id") == "ok-3");
  CHECK(items[2].at("payload_base64") == "gA==");
  CHECK(items_left(redis, "q") == 0);

  // The same from the dead letters.
  plant_dead(redis, "q", "\xc3(", "dead one", 4);
  r = rlock(redis, {"delay-pop", "q", "--dead"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  items = lines_of(r.out);
  REQUIRE(items.size() == 1);
  CHECK(items[0].at("id").is_null());
  CHECK(items[0].at("id_base64") == "wyg=");
  CHECK(items[0].at("payload") == "dead one");
}

TEST_CASE("delay-pop: a write to a full disk exits 74 and puts the items back, in order") {
  RedisServer redis;
  for (int i = 1; i <= 3; ++i) plant(redis, "q", cat("i", i), "p", i);
  auto r = to_file(redis, {"delay-pop", "q", "--count", "10"}, "> /dev/full");
  CHECK(r.status == 74);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("3 items") != std::string::npos);
  CHECK(items_left(redis, "q") == 3);
  auto items = lines_of(rlock(redis, {"delay-pop", "q", "--count", "10"}).out);
  REQUIRE(items.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(items[i].at("id") == cat("i", i + 1));
    CHECK(items[i].at("deliveries") == 1);
    CHECK(items[i].at("due_ms") == 1001 + i);
  }

  // Dead letters go back to the end of the dead letters.
  plant_dead(redis, "q", "d1", "p", 1);
  plant_dead(redis, "q", "d2", "p", 2);
  r = to_file(redis, {"delay-pop", "q", "--dead", "--count", "1"}, "> /dev/full");
  CHECK(r.status == 74);
  CHECK(redis.cmd({"LRANGE", key_of("q", ":dead"), "0", "-1"}) ==
        std::vector<std::string>{"d2", "d1"});
  items = lines_of(rlock(redis, {"delay-pop", "q", "--dead", "--count", "10"}).out);
  REQUIRE(items.size() == 2);
  CHECK(items[0].at("id") == "d2");
  CHECK(items[1].at("id") == "d1");
  CHECK(items[1].at("reason") == "delivered 0 times");
}

TEST_CASE("delay-pop: a reader gone with Redis down: exit 74 and the lost items counted") {
  // The docs: items are lost only when putting them back fails too, and the line says so.
  RedisServer redis;
  for (int i = 1; i <= 3; ++i) plant(redis, "q", cat("i", i), std::string(100'000, 'x'), i);
  TempDir dir;
  REQUIRE(mkfifo((dir / "out").c_str(), 0600) == 0);
  Env env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}};
  auto argv = to_file_argv({"delay-pop", "q", "--count", "10"}, cat("> ", dir / "out"), env);
  Spawned c(argv, env);
  Fd reader(open((dir / "out").c_str(), O_RDONLY | O_NONBLOCK));
  REQUIRE(reader);
  // Bytes in the pipe: the items were taken. The lines fill it and rlock blocks writing.
  pollfd p{reader.get(), POLLIN, 0};
  REQUIRE(poll(&p, 1, 10'000) == 1);
  redis.stop();
  reader.reset();  // the reader goes away: EPIPE, and Redis cannot take the items back
  CHECK(c.wait(deadline(15s)).value_or(kStillRunning) == 74);
  INFO("stderr: " << c.err());
  CHECK(line_count(c.err()) == 1);
  CHECK(c.err().find("the 3 items taken but not printed are lost unless the put-back reached") !=
        std::string::npos);
}

TEST_CASE("delay-pop: a closed stdout takes nothing (the next descriptor would be written)") {
  RedisServer redis;
  plant_dead(redis, "q", "d1", "p", 1);
  plant(redis, "q", "i2", "p", 2);
  for (const auto& form : {std::vector<std::string>{"delay-pop", "q", "--dead"},
                           std::vector<std::string>{"delay-pop", "q"},
                           std::vector<std::string>{"delay-pop", "q", "--forever"}}) {
    auto r = to_file(redis, form, ">&-");
    CHECK(r.status == 74);
    CHECK(r.err == "rlock: standard output is closed; nothing was taken from queue 'q'\n");
  }
  CHECK(redis.cmd({"LRANGE", key_of("q", ":dead"), "0", "-1"}) == std::vector<std::string>{"d1"});
  CHECK(items_left(redis, "q") == 2);
}

TEST_CASE("delay-pop: --forever stops at the first failed write, the items kept") {
  RedisServer redis;
  for (int i = 1; i <= 5; ++i) plant(redis, "q", cat("i", i), "p", i);
  Env env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}};
  auto argv = to_file_argv({"delay-pop", "q", "--forever"}, "> /dev/full", env);
  Spawned c(argv, env);
  CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 74);
  CHECK(items_left(redis, "q") == 5);
}

TEST_CASE("delay-pop: malformed metadata dead-letters the item with a reason; the pop goes on") {
  RedisServer redis;
  plant(redis, "q", "bad", "orphan?", 1, "garbage");
  plant(redis, "q", "good", "fine", 2);
  auto r = rlock(redis, {"delay-pop", "q", "--count", "10"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto items = lines_of(r.out);
  REQUIRE(items.size() == 1);
  CHECK(items[0].at("id") == "good");
  CHECK(redis.cmd({"LRANGE", key_of("q", ":dead"), "0", "-1"}) == std::vector<std::string>{"bad"});
  auto dead = lines_of(ok_out(rlock(redis, {"delay-pop", "q", "--dead"})));
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].at("id") == "bad");
  CHECK(dead[0].at("payload") == "orphan?");
  CHECK(dead[0].at("due_ms") == 1001);
  CHECK(dead[0].at("reason") == "malformed metadata: 'garbage'");
  CHECK(keys_but_reply_records(redis).empty());
}

TEST_CASE("delay-pop: an expired lease or a missing payload dead-letters the item too") {
  RedisServer redis;
  // In flight, its lease long expired, its metadata overwritten meanwhile.
  redis.cmd({"HSET", key_of("q", ""), "seq", "1"});
  redis.cmd({"ZADD", key_of("q", ":inflight"), "5000", "leased"});
  redis.cmd({"HSET", key_of("q", ":leases"), "leased", "tok consumer"});
  redis.cmd({"HSET", key_of("q", ":items"), "leased", "was in flight"});
  redis.cmd({"HSET", key_of("q", ":meta"), "leased", "7"});
  plant(redis, "q", "empty", "gone", 2);
  redis.cmd({"HDEL", key_of("q", ":items"), "empty"});
  auto r = rlock(redis, {"delay-pop", "q", "--count", "10"});
  CHECK(r.status == 75);
  auto dead = lines_of(ok_out(rlock(redis, {"delay-pop", "q", "--dead", "--count", "10"})));
  REQUIRE(dead.size() == 2);
  CHECK(dead[0].at("id") == "leased");
  CHECK(dead[0].at("payload") == "was in flight");
  CHECK(dead[0].at("due_ms") == 5000);
  CHECK(dead[0].at("reason") == "malformed metadata: '7'");
  CHECK(dead[1].at("id") == "empty");
  CHECK(dead[1].at("payload").is_null());
  CHECK_FALSE(dead[1].contains("payload_base64"));
  CHECK(dead[1].at("due_ms") == 1002);
  CHECK(dead[1].at("reason") == "no payload");
  CHECK(keys_but_reply_records(redis).empty());
}

TEST_CASE("delay-pop: behind more malformed items than one script buries, the next is taken") {
  RedisServer redis;
  for (int i = 1; i <= 250; ++i) plant(redis, "q", cat("bad", i), "x", i, "junk");
  plant(redis, "q", "good", "fine", 300);
  auto items = lines_of(ok_out(rlock(redis, {"delay-pop", "q"})));
  REQUIRE(items.size() == 1);
  CHECK(items[0].at("id") == "good");
  CHECK(redis.cmd_int({"LLEN", key_of("q", ":dead")}) == 250);
}

TEST_CASE("delay-pop -- CMD: a malformed item is dead-lettered with a reason, the next one runs") {
  RedisServer redis;
  plant(redis, "q", "bad", "orphan?", 1, "1 2 x");
  plant(redis, "q", "good", "fine", 2);
  auto r = rlock(redis, {"delay-pop", "q", "--", "cat"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == "fine");
  CHECK(redis.cmd({"LRANGE", key_of("q", ":dead"), "0", "-1"}) == std::vector<std::string>{"bad"});
  // Alone, it is still dead-lettered: "no item was due" is then the truth.
  plant(redis, "q", "bad2", "x", 3, "");
  redis.cmd({"HDEL", key_of("q", ":meta"), "bad2"});
  r = rlock(redis, {"delay-pop", "q", "--", "cat"});
  CHECK(r.status == 75);
  auto dead = lines_of(ok_out(rlock(redis, {"delay-pop", "q", "--dead", "--count", "10"})));
  REQUIRE(dead.size() == 2);
  CHECK(dead[0].at("id") == "bad");
  CHECK(dead[0].at("reason") == "malformed metadata: '1 2 x'");
  CHECK(dead[1].at("id") == "bad2");
  CHECK(dead[1].at("reason") == "no metadata");
  CHECK(keys_but_reply_records(redis).empty());
}

}  // namespace
}  // namespace rlock::test
