// Delayed queues under faults: an acknowledgement whose reply was lost, stop signals that
// reach a --forever consumer at any point of its cycle, a subscriber connection killed
// while a consumer sleeps, names that are not names.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "lib_util.hpp"
#include "prim/delay_queue.hpp"
#include "redis/reply.hpp"
#include "redis/scripts.hpp"
#include "reply_records.hpp"

namespace rlock::test {
namespace {

// Built by append: GCC 12 at -O3 warns falsely (-Wrestrict) on "{" + s + "}".
std::string queue_key(const std::string& name) {
  std::string key = "rlock:queue:{";
  key.append(name).push_back('}');
  return key;
}

std::string cat_path(pid_t pid) {
  std::string path = "/proc/";
  path.append(std::to_string(pid)).append("/status");
  return path;
}

void push_now(const RedisServer& redis, const std::string& id) {
  auto r = rlock(redis, {"delay-push", "q", id, "--delay", "0", "--id", id});
  INFO(r.err);
  REQUIRE(r.status == 0);
}

// Pushes `n` items "x" to queue q, due now, with one `delay-push - --lines` (plus `flags`).
void push_lines(const RedisServer& redis, int n, const std::string& flags = "") {
  TempDir dir;
  std::string lines;
  for (int i = 0; i < n; ++i) lines += "x\n";
  write_file(dir / "lines", lines);
  auto pushed =
      run({"sh", "-c",
           "exec \"$RL\" --url \"$URL\" delay-push q - --lines --delay 0 " + flags + " < \"$IN\""},
          {{"RL", rlock_binary()}, {"URL", redis.topology_url()}, {"IN", dir / "lines"}});
  REQUIRE(pushed.status == 0);
}

// queue_finish as the consumer sends it: the same request twice is a retry after its
// reply was lost.
long long finish(LibFixture& f, const prim::LeasedItem& l, const char* how) {
  std::vector<std::string> keys = {
      f.layout.queue_key("q"),          f.layout.queue_scheduled_key("q"),
      f.layout.queue_items_key("q"),    f.layout.queue_meta_key("q"),
      f.layout.queue_inflight_key("q"), f.layout.queue_leases_key("q"),
      f.layout.queue_dead_key("q"),     f.layout.queue_finished_key("q")};
  std::vector<std::string> args = {f.layout.queue_channel("q"), l.item.id, l.token, how, "0"};
  auto reply = f.conn.run(redis::scripts::queue_finish,
                          std::vector<std::string_view>(keys.begin(), keys.end()),
                          std::vector<std::string_view>(args.begin(), args.end()));
  return reply.at(0).integer();
}

TEST_CASE(
    "delay: a retried acknowledgement whose reply was lost says done; a stale one is refused") {
  LibFixture f;
  prim::DelayQueue q(f.conn, f.layout, "q");
  q.push({{"a", "one"}, {"b", "two"}}, {false, 0});
  auto a = q.lease(Millis(30'000), 0, "c1", in(Millis(5000)), {});
  REQUIRE(a);
  CHECK(finish(f, *a, "ack") == 1);
  CHECK(finish(f, *a, "ack") == 1);  // the retry: applied already, not "lease lost"
  CHECK(finish(f, *a, "ack") == 1);  // and again, when the retry's reply was lost too
  CHECK(f.server.cmd_int({"HEXISTS", f.layout.queue_meta_key("q"), "a"}) == 0);
  // The token stays until the consumer, having a reply, forgets it.
  CHECK(f.server.cmd_int({"ZCARD", f.layout.queue_finished_key("q")}) == 1);
  f.server.cmd({"DEL", f.layout.queue_finished_key("q")});

  // Through the hold, as the supervision acknowledges: nothing stays behind once the reply
  // came.
  auto b = q.lease(Millis(30'000), 0, "c1", in(Millis(5000)), {});
  REQUIRE(b);
  auto hold = q.hold(*b);
  hold->job_ended(0);
  CHECK(hold->release(Millis(0)) == prim::Hold::Released::kReleased);
  CHECK(keys_but_reply_records(f.server).empty());

  // A lease that ran out, its item acknowledged by the next consumer: refused, even when
  // retried.
  q.push({{"c", "three"}}, {false, 0});
  auto stale = q.lease(Millis(100), 0, "c1", in(Millis(5000)), {});
  REQUIRE(stale);
  auto next = q.lease(Millis(30'000), 0, "c2", in(Millis(5000)), {});
  REQUIRE(next);
  CHECK(next->item.id == "c");
  CHECK(next->item.deliveries == 2);
  CHECK(finish(f, *next, "ack") == 1);
  CHECK(finish(f, *stale, "ack") == 0);
  CHECK(finish(f, *stale, "ack") == 0);
  auto late = q.hold(*stale);
  late->job_ended(0);
  CHECK(late->release(Millis(0)) == prim::Hold::Released::kNotHeld);
}

// A --forever consumer whose command traps TERM, says it started, waits for `go`, then
// says it ended (exit 0).
Spawned trapping_consumer(const RedisServer& redis, const TempDir& dir) {
  return spawn_rlock(redis, {"delay-pop", "q", "--forever", "--visibility", "10s", "--", "sh", "-c",
                             "trap '' TERM; echo \"$RLOCK_ITEM_ID\" >> \"$0/started\"; "
                             "while [ ! -e \"$0/go\" ]; do sleep 0.01; done; "
                             "echo \"$RLOCK_ITEM_ID\" >> \"$0/ended\"",
                             dir.path().string()});
}

// A trapping consumer that runs item i1, with i2 due behind it.
Spawned running_first_of_two(const RedisServer& redis, const TempDir& dir) {
  push_now(redis, "i1");
  auto c = trapping_consumer(redis, dir);
  REQUIRE(poll_until([&] { return std::filesystem::exists(dir / "started"); }, 10s));
  push_now(redis, "i2");  // due, but this consumer serves one item at a time
  return c;
}

// One item acknowledged, the other untouched (scheduled, not in flight), nothing else.
void first_settled_second_waiting(const RedisServer& redis) {
  auto q = parse_json(rlock(redis, {"inspect", "--type", "queue"}).out);
  REQUIRE(q.size() == 1);
  CHECK(q[0].at("scheduled") == 1);
  CHECK(q[0].at("in_flight_total") == 0);
  CHECK(q[0].at("dead") == 0);
  CHECK(redis.cmd_int({"HEXISTS", queue_key("q") + ":meta", "i1"}) == 0);
  CHECK(redis.cmd_int({"HEXISTS", queue_key("q") + ":meta", "i2"}) == 1);
}

TEST_CASE("delay: --forever -- CMD ends cleanly on TERM during the acknowledgement") {
  RedisServer redis;
  TempDir dir;
  auto c = running_first_of_two(redis, dir);
  // The acknowledgement waits on the paused server; TERM comes while it does.
  redis.cmd({"CLIENT", "PAUSE", "1500", "WRITE"});
  write_file(dir / "go", "");
  REQUIRE(poll_until([&] { return std::filesystem::exists(dir / "ended"); }, 10s));
  c.kill(SIGTERM);
  INFO(c.err());
  CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(read_file(dir / "started") == "i1\n");
  first_settled_second_waiting(redis);
}

TEST_CASE("delay: --forever -- CMD: TERM forwarded to a CMD that ignores it ends the service") {
  RedisServer redis;
  TempDir dir;
  auto c = running_first_of_two(redis, dir);
  c.kill(SIGTERM);  // forwarded to the command, which goes on and succeeds
  write_file(dir / "go", "");
  INFO(c.err());
  CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(read_file(dir / "ended") == "i1\n");
  first_settled_second_waiting(redis);
}

TEST_CASE("delay: --forever -- CMD: TERM at any point of the cycle exits 0 and loses nothing") {
  RedisServer redis;
  // Fast items, TERM at spread-out moments: whichever step it hits (waiting, leasing,
  // running, acknowledging, between items), the service ends with 0 and every item is
  // either done once or still queued, none left in flight. The command ignores the TERM
  // forwarded to it: one killed after its write but before its exit failed, and its item
  // is given back to run again, as documented (seen behind a sentinel, whose longer cycle
  // puts more TERMs inside the command).
  push_lines(redis, 400, "--id i");
  TempDir dir;
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    auto c = spawn_rlock(redis, {"delay-pop", "q", "--forever", "--", "sh", "-c",
                                 "trap '' TERM; echo \"$RLOCK_ITEM_ID\" >> \"$0\"", dir / "done"});
    auto wait_ms = 30 + 17 * round;
    REQUIRE(poll_until([&] { return !c.running(); }, std::chrono::milliseconds(wait_ms), 5ms) ==
            false);
    c.kill(SIGTERM);
    INFO(c.err());
    CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
    auto q = parse_json(rlock(redis, {"inspect", "--type", "queue"}).out);
    if (!q.empty()) CHECK(q[0].at("in_flight_total") == 0);
  }
  std::istringstream in(std::filesystem::exists(dir / "done") ? read_file(dir / "done") : "");
  std::set<std::string> done;
  std::string id;
  int runs = 0;
  while (in >> id) {
    done.insert(id);
    ++runs;
  }
  CHECK(runs == static_cast<int>(done.size()));  // none twice
  long long left = redis.cmd_int({"HLEN", queue_key("q") + ":meta"});
  CHECK(static_cast<long long>(done.size()) + left == 400);
}

TEST_CASE("delay: a wake-up lost with a killed subscriber delays an item by the re-check at most") {
  RedisServer redis;
  auto consumer = spawn_rlock(redis, {"delay-pop", "q", "--wait", "30s"});
  REQUIRE(poll_until([&] { return subscribers(redis, "rlock:chan:{q}:queue") == 1; }, 10s));
  redis.cmd({"CLIENT", "KILL", "TYPE", "pubsub"});
  auto pushed_at = Clock::now();
  push_now(redis, "late");
  INFO(consumer.err());
  REQUIRE(consumer.wait(deadline(15s)).value_or(kStillRunning) == 0);
  CHECK(ms_between(pushed_at, consumer.exit_time()) < 5000 + 1500);  // kQueueRecheck: 5s
  CHECK(lines_of(consumer.out()).at(0).at("payload") == "late");
}

TEST_CASE("delay: names that are not names, and a payload exactly at the limit") {
  RedisServer redis;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"delay-push", "", "x", "--delay", "0"},
        {"delay-push", "q\xff", "x", "--delay", "0"},
        {"delay-push", "q", "x", "--delay", "0", "--id", "\xc3("},
        {"delay-pop", ""},
        {"delay-pop", "\xed\xa0\x80"}}) {
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(keys_but_reply_records(redis).empty());
  }
  auto at = rlock(
      redis, {"delay-push", "q", std::string(1000, 'x'), "--delay", "0", "--max-payload", "1000"});
  CHECK(at.status == 0);
  auto over = rlock(
      redis, {"delay-push", "q", std::string(1001, 'x'), "--delay", "0", "--max-payload", "1000"});
  CHECK(over.status == 65);
  CHECK(line_count(over.err) == 1);
  CHECK(redis.cmd_int({"HLEN", queue_key("q") + ":meta"}) == 1);
}

TEST_CASE("delay: inspect counts every due item, beyond the ones it lists") {
  RedisServer redis;
  push_lines(redis, 150);
  auto later = rlock(redis, {"delay-push", "q", "later", "--delay", "1h"});
  REQUIRE(later.status == 0);
  auto q = parse_json(rlock(redis, {"inspect", "--type", "queue"}).out);
  REQUIRE(q.size() == 1);
  CHECK(q[0].at("scheduled") == 151);
  CHECK(q[0].at("due") == 150);
}

// Resident anonymous memory of process `pid`, in kB.
long long rss_anon_kb(pid_t pid) {
  std::istringstream in(read_file(cat_path(pid)));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8));
  }
  return -1;
}

TEST_CASE("delay: --forever -- CMD memory stays bounded over many items") {
  RedisServer redis;
  push_lines(redis, 1500);
  auto c = spawn_rlock(redis, {"delay-pop", "q", "--forever", "--", "true"});
  auto left = [&] { return redis.cmd_int({"HLEN", queue_key("q") + ":meta"}); };
  REQUIRE(poll_until([&] { return left() <= 1200; }, 60s, 5ms));
  long long early = rss_anon_kb(c.pid());
  REQUIRE(poll_until([&] { return left() == 0; }, 60s, 20ms));
  long long late = rss_anon_kb(c.pid());
  MESSAGE("RssAnon after ~300 items " << early << " kB, after 1500 " << late << " kB");
  CHECK(early > 0);
  CHECK(late < early + 1024);  // a leak of a guardian stack per item was ~8 kB each
  c.kill(SIGTERM);
  CHECK(c.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

}  // namespace
}  // namespace rlock::test
