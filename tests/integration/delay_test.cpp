// `rlock delay-push` / `delay-pop`: due times on the server clock, push order within a
// millisecond, idempotent ids, binary payloads, consumers woken rather than polling,
// reliable consumption under crashes and stalls, dead letters, and bad input that changes
// nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "documented_acl.hpp"
#include "harness.hpp"
#include "reply_records.hpp"

namespace rlock::test {
namespace {

// Built by append: GCC 12 at -O3 warns falsely (-Wrestrict) on "{" + s + "}".
std::string queue_key(const std::string& name) {
  std::string key = "rlock:queue:{";
  key.append(name).push_back('}');
  return key;
}

RunResult ok(const RedisServer& redis, const std::vector<std::string>& args) {
  auto r = rlock(redis, args);
  INFO("args: " << json(args).dump() << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  return r;
}

json push(const RedisServer& redis, const std::string& queue,
          const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"delay-push", queue};
  argv.insert(argv.end(), args.begin(), args.end());
  auto lines = lines_of(ok(redis, argv).out);
  REQUIRE(lines.size() == 1);
  return lines[0];
}

// `rlock ... args` with `input` on stdin (through sh, the harness gives children /dev/null).
RunResult with_stdin(const RedisServer& redis, const std::string& input_file,
                     const std::vector<std::string>& args) {
  std::string cmd = "exec \"$RL\" --url \"$URL\"";
  for (size_t i = 0; i < args.size(); ++i) cmd.append(" \"$A").append(std::to_string(i)) += '"';
  cmd += " < \"$IN\"";
  Env env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}, {"IN", input_file}};
  for (size_t i = 0; i < args.size(); ++i) env.emplace_back(cat("A", i), args[i]);
  return run({"sh", "-c", cmd}, env);
}

TEST_CASE("delay: push and pop, --delay 0, the item's fields, empty queue exits 75") {
  RedisServer redis;
  auto p = push(redis, "q", {"hello world", "--delay", "0"});
  CHECK(p.at("queue") == "q");
  CHECK(p.at("duplicate") == false);
  CHECK(p.at("id").get<std::string>().size() == 32);
  auto items = lines_of(ok(redis, {"delay-pop", "q"}).out);
  REQUIRE(items.size() == 1);
  CHECK(items[0].at("id") == p.at("id"));
  CHECK(items[0].at("payload") == "hello world");
  CHECK(items[0].at("due_ms") == p.at("due_ms"));
  CHECK(items[0].at("deliveries") == 1);
  CHECK(items[0].at("lateness_ms").get<long long>() >= 0);
  CHECK(items[0].at("due_ms").get<long long>() <= items[0].at("delivered_ms").get<long long>());
  CHECK(keys_but_reply_records(redis).empty());  // nothing left behind

  auto r = rlock(redis, {"delay-pop", "q"});
  CHECK(r.status == 75);
  CHECK(line_count(r.err) == 1);
  CHECK(r.out == "");
}

TEST_CASE("delay: binary and multi-line payloads round-trip, from stdin too") {
  RedisServer redis;
  TempDir dir;
  const std::string bytes(
      "\xff\x00"
      "abc\n\x80",
      7);
  write_file(dir / "bin", bytes);
  auto r = with_stdin(redis, dir / "bin", {"delay-push", "q", "-", "--delay", "0", "--id", "b"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  push(redis, "q", {"line one\nline \"two\"\ttab", "--delay", "0", "--id", "t"});
  auto items = lines_of(ok(redis, {"delay-pop", "q", "--count", "5"}).out);
  REQUIRE(items.size() == 2);
  CHECK(items[0].at("id") == "b");
  CHECK(items[0].at("payload").is_null());
  CHECK(items[0].at("payload_base64") == "/wBhYmMKgA==");
  CHECK(items[1].at("payload") == "line one\nline \"two\"\ttab");
  CHECK_FALSE(items[1].contains("payload_base64"));

  // The same bytes reach a command's stdin unchanged.
  r = with_stdin(redis, dir / "bin", {"delay-push", "q", "-", "--delay", "0"});
  REQUIRE(r.status == 0);
  ok(redis, {"delay-pop", "q", "--", "sh", "-c", "cat > \"$0\"", dir / "got"});
  CHECK(read_file(dir / "got") == bytes);
  // A payload far larger than a pipe's buffer reaches the command whole (no deadlock).
  write_file(dir / "big", std::string(3 << 20, 'z'));
  r = with_stdin(redis, dir / "big",
                 {"delay-push", "q", "-", "--delay", "0", "--max-payload", "4MiB"});
  REQUIRE(r.status == 0);
  auto big = ok(redis, {"delay-pop", "q", "--", "sh", "-c", "sleep 0.2; wc -c"});
  CHECK(big.out == cat(3 << 20, "\n"));
}

TEST_CASE("delay: --id is idempotent while the item is queued") {
  RedisServer redis;
  auto first = push(redis, "q", {"a", "--delay", "1h", "--id", "job-1"});
  auto again = push(redis, "q", {"b", "--delay", "5s", "--id", "job-1"});
  CHECK(first.at("duplicate") == false);
  CHECK(again.at("duplicate") == true);
  CHECK(again.at("due_ms") == first.at("due_ms"));
  CHECK(redis.cmd_int({"ZCARD", queue_key("q") + ":sched"}) == 1);
  CHECK(redis.cmd_str({"HGET", queue_key("q") + ":items", "job-1"}) == "a");
}

TEST_CASE("delay: items due in the same millisecond come out in push order") {
  RedisServer redis;
  TempDir dir;
  std::string lines;
  for (int i = 1; i <= 300; ++i) lines += cat("item-", i, "\n");
  write_file(dir / "lines", lines);
  auto r = with_stdin(redis, dir / "lines", {"delay-push", "q", "--lines", "--at", "1700000000"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto pushed = lines_of(r.out);
  REQUIRE(pushed.size() == 300);
  for (const auto& p : pushed) CHECK(p.at("due_ms") == 1700000000000LL);
  push(redis, "q", {"later", "--at", "1700000000.001"});
  push(redis, "q", {"earlier", "--at", "1699999999.999"});
  std::vector<std::string> got;
  while (got.size() < 302) {
    auto items = lines_of(ok(redis, {"delay-pop", "q", "--count", "7"}).out);
    REQUIRE(!items.empty());
    for (const auto& it : items) got.push_back(it.at("payload"));
  }
  REQUIRE(got.size() == 302);
  CHECK(got.front() == "earlier");
  for (int i = 1; i <= 300; ++i) CHECK(got[i] == cat("item-", i));
  CHECK(got.back() == "later");
}

TEST_CASE("delay: --at takes RFC 3339 with Z or an offset, and Unix seconds") {
  RedisServer redis;
  const long long kAt = 1795341600000LL;  // 2026-11-22T10:00:00Z
  struct Case {
    std::string at;
    long long due_ms;
  } cases[] = {{"2026-11-22T10:00:00Z", kAt},
               {"2026-11-22T12:00:00+02:00", kAt},
               {"2026-11-22t08:30:00.250-01:30", kAt + 250},
               {"2026-11-22 10:00:00.5z", kAt + 500},
               {"1795341600", kAt},
               {"1795341600.25", kAt + 250}};
  int i = 0;
  for (const auto& c : cases) {
    auto p = push(redis, "q", {"x", "--at", c.at, "--id", std::to_string(i++)});
    CHECK_MESSAGE(p.at("due_ms") == c.due_ms, c.at);
  }
}

TEST_CASE("delay: a consumer sleeps until the item is due, and an earlier push wakes it") {
  RedisServer redis;
  auto start = Clock::now();
  push(redis, "q", {"soon", "--delay", "700ms"});
  auto r = ok(redis, {"delay-pop", "q", "--wait", "10s"});
  auto items = lines_of(r.out);
  REQUIRE(items.size() == 1);
  CHECK(ms_between(start) >= 650);
  CHECK(items[0].at("lateness_ms").get<long long>() < 500);

  // Sleeping on an item due in an hour: a push due now wakes the consumer well before its
  // 5s re-check.
  push(redis, "q", {"late", "--delay", "1h"});
  auto consumer = spawn_rlock(redis, {"delay-pop", "q", "--wait", "20s"});
  REQUIRE(poll_until([&] { return subscribers(redis, "rlock:chan:{q}:queue") == 1; }, 10s));
  auto pushed_at = Clock::now();
  push(redis, "q", {"now", "--delay", "0"});
  REQUIRE(consumer.wait(deadline(15s)).value_or(kStillRunning) == 0);
  CHECK(ms_between(pushed_at, consumer.exit_time()) < 2500);
  CHECK(lines_of(consumer.out()).at(0).at("payload") == "now");
}

TEST_CASE("delay: bad input changes nothing") {
  RedisServer redis;
  TempDir dir;
  push(redis, "q", {"keep", "--delay", "1h", "--id", "k"});
  redis.cmd({"SET", queue_key("str"), "x"});
  write_file(dir / "big", std::string(2000, 'x'));
  const auto before = snapshot(redis);
  struct Case {
    std::vector<std::string> args;
    int status;
  } cases[] = {
      {{"delay-push", "q", "x", "--at", "tomorrow"}, 64},
      {{"delay-push", "q", "x", "--at", "2026-11-22T10:00:00"}, 64},  // no offset
      {{"delay-push", "q", "x", "--at", "2026-02-30T10:00:00Z"}, 64},
      {{"delay-push", "q", "x", "--delay", "1s", "--at", "1795341600"}, 64},
      {{"delay-push", "q", "x"}, 64},
      {{"delay-push", "q", "x", "--delay=-5s"}, 64},
      {{"delay-push", "q", "--delay", "1s"}, 64},  // no payload
      {{"delay-push", "q", std::string(2000, 'x'), "--delay", "1s", "--max-payload", "1KiB"}, 65},
      {{"delay-push", "q", "x", "--delay", "1s", "--max-payload", "lots"}, 64},
      {{"delay-push", "str", "x", "--delay", "0"}, 65},
      {{"delay-pop", "str"}, 65},
      {{"delay-pop", "q", "--count", "0"}, 64},
      {{"delay-pop", "q", "--visibility", "0", "--", "true"}, 64},
      {{"delay-pop", "q", "--max-deliveries", "0", "--", "true"}, 64},
      {{"delay-pop", "q", "--count", "2", "--", "true"}, 64},
      {{"delay-pop", "q", "--visibility", "5s"}, 64},  // no command
      {{"delay-pop", "q", "--dead", "--wait", "1s"}, 64},
      {{"delay-pop", "q", "--forever", "--wait", "1s"}, 64},
  };
  for (const auto& c : cases) {
    auto r = rlock(redis, c.args);
    INFO("args: " << json(c.args).dump() << "\nstderr: " << r.err);
    CHECK(r.status == c.status);
    CHECK(line_count(r.err) == 1);
    CHECK(r.out == "");
    CHECK(snapshot(redis) == before);
  }
  auto r = with_stdin(redis, dir / "big",
                      {"delay-push", "q", "-", "--delay", "0", "--max-payload", "1000"});
  CHECK(r.status == 65);
  CHECK(line_count(r.err) == 1);
  CHECK(snapshot(redis) == before);
}

// Lines of a file, each a JSON item.
std::vector<json> json_lines(const std::string& path) {
  std::vector<json> out;
  if (!std::filesystem::exists(path)) return out;
  return lines_of(read_file(path));
}

size_t lines_in(const std::string& path) {
  if (!std::filesystem::exists(path)) return 0;
  auto text = read_file(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_CASE("delay: 10000 items, 4 producers, 4 consumers: none lost, none twice, none early") {
  RedisServer redis;
  TempDir dir;
  constexpr int kProducers = 4, kBatches = 25, kPerBatch = 100;
  constexpr size_t kTotal = kProducers * kBatches * kPerBatch;
  std::mt19937 rng(42);
  std::vector<Spawned> consumers;
  for (int c = 0; c < 4; ++c) {
    consumers.emplace_back(
        std::vector<std::string>{"sh", "-c",
                                 "exec \"$RL\" --url \"$URL\" delay-pop load --forever --count 50 "
                                 "> \"$OUT\""},
        Env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}, {"OUT", dir / cat("c", c)}});
  }
  REQUIRE(poll_until([&] { return subscribers(redis, "rlock:chan:{load}:queue") == 4; }, 10s));
  std::vector<Spawned> producers;
  for (int p = 0; p < kProducers; ++p) {
    std::string script;
    for (int b = 0; b < kBatches; ++b) {
      int delay = std::uniform_int_distribution<int>(0, 5000)(rng);
      script += cat("seq -f 'p", p, "b", b, "-%g' ", kPerBatch,
                    " | \"$RL\" --url \"$URL\" delay-push load --lines --delay ", delay,
                    "ms > /dev/null || exit 1\n");
    }
    producers.emplace_back(std::vector<std::string>{"sh", "-c", script},
                           Env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}});
  }
  for (auto& p : producers) {
    INFO(p.err());
    REQUIRE(p.wait(deadline(60s)).value_or(kStillRunning) == 0);
  }
  auto delivered = [&] {
    size_t n = 0;
    for (int c = 0; c < 4; ++c) n += lines_in(dir / cat("c", c));
    return n;
  };
  bool all = poll_until([&] { return delivered() >= kTotal; }, 30s, 50ms);
  for (auto& c : consumers) c.kill(SIGTERM);
  for (auto& c : consumers) {
    INFO(c.err());
    CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  }
  REQUIRE(all);
  std::set<std::string> seen;
  std::vector<long long> lateness;
  size_t twice = 0, early = 0;
  for (int c = 0; c < 4; ++c) {
    for (const auto& it : json_lines(dir / cat("c", c))) {
      if (!seen.insert(it.at("payload").get<std::string>()).second) ++twice;
      if (it.at("due_ms").get<long long>() > it.at("delivered_ms").get<long long>()) ++early;
      lateness.push_back(it.at("lateness_ms"));
    }
  }
  CHECK(seen.size() == kTotal);
  CHECK(twice == 0);
  CHECK(early == 0);
  std::sort(lateness.begin(), lateness.end());
  long long p50 = lateness[lateness.size() / 2], p99 = lateness[lateness.size() * 99 / 100];
  MESSAGE("lateness p50 " << p50 << " ms, p99 " << p99 << " ms, max " << lateness.back() << " ms");
  // Generous: it catches consumers that sleep past a due item (a poll, a missed wake-up),
  // while four consumers and four producers share the machine with whatever else runs; the
  // figure itself is bench part H's (bench/README.md: p99 3 ms on an idle machine).
  CHECK(p99 < 500);
  CHECK(keys_but_reply_records(redis).empty());
}

// A consumer with a command recording "<id> <deliveries> <payload>" per run.
Spawned recorder(const RedisServer& redis, const TempDir& dir, const std::string& queue) {
  return Spawned({"sh", "-c",
                  "exec \"$RL\" --url \"$URL\" delay-pop \"$Q\" --forever --visibility 1s -- "
                  "sh -c 'echo \"$RLOCK_ITEM_ID $RLOCK_DELIVERIES $(cat)\" >> \"$0\"' \"$OUT\""},
                 Env{{"RL", rlock_binary()},
                     {"URL", redis.topology_url()},
                     {"Q", queue},
                     {"OUT", dir / "done"}});
}

TEST_CASE("delay: -- CMD consumers SIGKILLed every 200 items lose nothing, count redeliveries") {
  RedisServer redis;
  TempDir dir;
  constexpr int kItems = 1000;
  std::string lines;
  for (int i = 1; i <= kItems; ++i) lines += cat("payload-", i, "\n");
  write_file(dir / "lines", lines);
  auto r = with_stdin(redis, dir / "lines",
                      {"delay-push", "jobs", "--lines", "--delay", "0", "--id", "j"});
  REQUIRE(r.status == 0);
  std::vector<Spawned> consumers;
  for (int c = 0; c < 3; ++c) consumers.push_back(recorder(redis, dir, "jobs"));
  int kills = 0;
  size_t next_kill = 200;
  auto start = Clock::now();
  while (redis.cmd_int({"EXISTS", queue_key("jobs")}) == 1 && ms_between(start) < 90'000) {
    if (lines_in(dir / "done") >= next_kill) {
      consumers[kills % 3].kill(SIGKILL);
      consumers[kills % 3].wait(deadline(5s));
      consumers[kills % 3] = recorder(redis, dir, "jobs");
      ++kills;
      next_kill += 200;
    }
    poll_until([&] { return lines_in(dir / "done") >= next_kill; }, 200ms, 20ms);
  }
  // Waiting for more, a --forever consumer ends on TERM with status 0.
  for (auto& c : consumers) c.kill(SIGTERM);
  for (auto& c : consumers) {
    INFO(c.err());
    CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  }
  // Nothing is left but, when a consumer was killed between an acknowledgement's reply and
  // its forget, that delivery's record in :finished, which expires within 60 s (rlock(1)).
  for (const auto& key : keys_but_reply_records(redis)) {
    CAPTURE(key);
    CHECK(key == queue_key("jobs") + ":finished");
    long long ttl = redis.cmd_int({"PTTL", key});
    CHECK(ttl > 0);
    CHECK(ttl <= 60000);
  }
  std::map<std::string, std::vector<int>> runs;  // id -> deliveries seen
  std::istringstream in(read_file(dir / "done"));
  std::string id, payload;
  int n = 0;
  while (in >> id >> n >> payload) {
    runs[id].push_back(n);
    CHECK(payload == cat("payload-", id.substr(2)));
  }
  CHECK(runs.size() == static_cast<size_t>(kItems));
  int redelivered = 0;
  for (auto& [item, seen] : runs) {
    std::sort(seen.begin(), seen.end());
    // Each run saw its own delivery number: a repeat is always counted.
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    CHECK(seen.back() >= static_cast<int>(seen.size()));
    if (seen.back() > 1) ++redelivered;
  }
  MESSAGE(kills << " consumers killed; " << redelivered << " items delivered more than once");
  CHECK(kills >= 3);
}

TEST_CASE("delay: an item failing every time ends in the dead letters after --max-deliveries") {
  RedisServer redis;
  push(redis, "q", {"poison", "--delay", "0", "--id", "bad"});
  const std::vector<std::string> fail = {
      "delay-pop",        "q", "--visibility", "1s", "--wait", "10s",
      "--max-deliveries", "3", "--",           "sh", "-c",     "echo $RLOCK_DELIVERIES; exit 3"};
  for (int i = 1; i <= 3; ++i) {
    auto r = rlock(redis, fail);
    INFO(r.err);
    CHECK(r.status == 3);
    CHECK(r.out == cat(i, "\n"));
  }
  auto none = rlock(redis, {"delay-pop", "q", "--wait", "1500ms", "--", "true"});
  CHECK(none.status == 75);
  auto inspect = parse_json(ok(redis, {"inspect", "--type", "queue"}).out);
  REQUIRE(inspect.size() == 1);
  CHECK(inspect[0].at("dead") == 1);
  CHECK(inspect[0].at("scheduled") == 0);
  auto dead = lines_of(ok(redis, {"delay-pop", "q", "--dead"}).out);
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].at("id") == "bad");
  CHECK(dead[0].at("payload") == "poison");
  CHECK(dead[0].at("deliveries") == 3);
  CHECK(dead[0].at("reason") == "delivered 3 times (--max-deliveries 3)");
  CHECK(keys_but_reply_records(redis).empty());
  CHECK(rlock(redis, {"delay-pop", "q", "--dead"}).status == 75);
}

TEST_CASE("delay: a consumer stopped past its lease cannot acknowledge; the item completes once") {
  RedisServer redis;
  TempDir dir;
  push(redis, "q", {"once", "--delay", "0", "--id", "it"});
  // A's command says it started, then finishes (exit 0) once told to: while A is stopped.
  auto a = spawn_rlock(redis, {"delay-pop", "q", "--visibility", "1s", "--", "sh", "-c",
                               "touch \"$0/started\"; while [ ! -e \"$0/go\" ]; do sleep 0.02; "
                               "done; echo A >> \"$0/acks\"",
                               dir.path().string()});
  REQUIRE(poll_until([&] { return std::filesystem::exists(dir / "started"); }, 10s));
  a.kill(SIGSTOP);
  write_file(dir / "go", "");
  // B gets the item once A's lease runs out, and acknowledges it.
  auto b = rlock(redis, {"delay-pop", "q", "--wait", "10s", "--", "sh", "-c",
                         "echo B $RLOCK_DELIVERIES >> \"$0/acks\"", dir.path().string()});
  INFO(b.err);
  CHECK(b.status == 0);
  a.kill(SIGCONT);
  REQUIRE(a.wait(deadline(10s)).value_or(kStillRunning) == 76);
  INFO(a.err());
  CHECK(line_count(a.err()) == 1);
  CHECK(keys_but_reply_records(redis).empty());
  std::string acks = read_file(dir / "acks");
  CHECK(acks.find("B 2\n") != std::string::npos);
}

TEST_CASE("delay: inspect shows scheduled, due, in-flight items with consumers, next due") {
  RedisServer redis;
  TempDir dir;
  push(redis, "q", {"now", "--delay", "0", "--id", "a"});
  push(redis, "q", {"later", "--at", "4102444800", "--id", "b"});  // 2100-01-01
  push(redis, "q", {"now2", "--delay", "0", "--id", "c"});
  auto busy = spawn_rlock(redis, {"delay-pop", "q", "--visibility", "30s", "--", "sh", "-c",
                                  "touch \"$0/started\"; while [ ! -e \"$0/go\" ]; do sleep 0.02; "
                                  "done",
                                  dir.path().string()});
  REQUIRE(poll_until([&] { return std::filesystem::exists(dir / "started"); }, 10s));
  auto all = parse_json(ok(redis, {"inspect", "--type", "queue"}).out);
  REQUIRE(all.size() == 1);
  const auto& q = all[0];
  CHECK(q.at("name") == "q");
  CHECK(q.at("scheduled") == 2);
  CHECK(q.at("due") == 1);
  CHECK(q.at("in_flight_total") == 1);
  REQUIRE(q.at("in_flight").size() == 1);
  CHECK(q.at("in_flight")[0].at("id") == "a");
  CHECK(q.at("in_flight")[0].at("consumer").get<std::string>().find(':') != std::string::npos);
  CHECK(q.at("in_flight")[0].at("lease_ms").get<long long>() > 20'000);
  CHECK(q.at("dead") == 0);
  write_file(dir / "go", "");
  CHECK(busy.wait(deadline(10s)).value_or(kStillRunning) == 0);
  auto table = ok(redis, {"--format", "table", "inspect"});
  CHECK(table.out.find("queue") != std::string::npos);
}

// The rights documented under ACL in rlock(1), and nothing more.
const std::string kQueueAcl = documented_acl_user();

TEST_CASE("delay: the documented ACL is enough; one right less exits 77 and changes nothing") {
  RedisServer redis;
  {
    as_new_server_with_user(redis, kQueueAcl);
    const Env as_rl{{"RLOCK_URL", cat("redis://rl:rlpw@127.0.0.1:", redis.port())}};
    CHECK(rlock_raw({"delay-push", "q", "a", "--delay", "0"}, as_rl).status == 0);
    CHECK(rlock_raw({"delay-push", "q", "b", "--delay", "0", "--id", "b"}, as_rl).status == 0);
    CHECK(rlock_raw({"delay-pop", "q"}, as_rl).status == 0);
    CHECK(rlock_raw({"delay-pop", "q", "--max-deliveries", "1", "--", "false"}, as_rl).status == 1);
    auto listed = rlock_raw({"inspect", "--type", "queue"}, as_rl);
    CHECK(listed.status == 0);
    CHECK(parse_json(listed.out).at(0).at("dead") == 1);
    CHECK(rlock_raw({"delay-pop", "q", "--dead"}, as_rl).status == 0);
    CHECK(keys_but_reply_records(redis).empty());
  }
  for (const char* missing : {"rpush", "hset", "zadd", "spublish", "hincrby"}) {
    CAPTURE(missing);
    as_new_server_with_user(redis, kQueueAcl + " -" + missing);
    const Env as_rl{{"RLOCK_URL", cat("redis://rl:rlpw@127.0.0.1:", redis.port())}};
    auto r = rlock_raw({"delay-push", "q", "a", "--delay", "0"}, as_rl);
    CHECK(r.status == 77);
    CHECK(line_count(r.err) == 1);
    CHECK(keys_but_reply_records(redis).empty());
  }
}

}  // namespace
}  // namespace rlock::test
