// Lost replies: a request whose reply is lost (the connection dropped right after the
// server ran it, or a flow that never delivers it) is repeated within --timeout and
// reports what the first run did; a request lost before the server saw it runs once. And
// --timeout bounds a command against a stalled server, clean-up included.
#include <doctest/doctest.h>
#include <signal.h>

#include "harness.hpp"
#include "lossy_proxy.hpp"

namespace rlock::test {
namespace {

using Loss = LossyProxy::Loss;

// `rlock --url <proxy> args...`
RunResult via(const LossyProxy& proxy, const std::vector<std::string>& args, const Env& env = {}) {
  std::vector<std::string> argv = {"--url", proxy.url()};
  argv.insert(argv.end(), args.begin(), args.end());
  return rlock_raw(argv, env);
}

// The scripts a test loses replies of are cached on the server first, so that the lost
// request is the script itself, not an EVALSHA answered NOSCRIPT.
void warm_up(const RedisServer& redis, const std::vector<std::vector<std::string>>& commands) {
  for (const auto& c : commands) rlock(redis, c);
}

TEST_CASE(
    "lost reply: unlock, unlock -s and unlock --force are repeated and report the first run") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  warm_up(redis, {{"lock", "w", "--owner", "a"}, {"unlock", "w", "--owner", "a"}});
  REQUIRE(rlock(redis, {"lock", "L", "--owner", "a"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "L", "--owner", "a"}).status == 0);

  // A count-2 unlock whose reply is lost: one level dropped, and that is what is reported.
  // (The proxy carries nothing but the unlock: the lock's hash tag names its request.)
  proxy.lose("{L}", Loss::kReply);
  auto r = via(proxy, {"unlock", "L", "--owner", "a"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) ==
        json{{"name", "L"}, {"owner", "a"}, {"released", false}, {"count", 1}});
  CHECK(redis.cmd_str({"HGET", lock_key("L"), "a"}) == "1");

  // A request lost before the server saw it runs once, on the repeat.
  proxy.lose("{L}", Loss::kRequest);
  auto r2 = via(proxy, {"unlock", "L", "--owner", "a"});
  INFO("stdout: " << r2.out << "\nstderr: " << r2.err);
  CHECK(proxy.losses() == 2);
  CHECK(r2.status == 0);
  CHECK(parse_json(r2.out) ==
        json{{"name", "L"}, {"owner", "a"}, {"released", true}, {"count", 0}});
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);

  // A shared hold's unlock.
  REQUIRE(rlock(redis, {"lock", "S", "--shared", "--owner", "r"}).status == 0);
  proxy.lose("{S}", Loss::kReply);
  auto r3 = via(proxy, {"unlock", "S", "--shared", "--owner", "r"});
  INFO("stdout: " << r3.out << "\nstderr: " << r3.err);
  CHECK(proxy.losses() == 3);
  CHECK(r3.status == 0);
  CHECK(parse_json(r3.out) ==
        json{{"name", "S"}, {"owner", "r"}, {"released", true}, {"count", 0}});

  // --force: the holders it removed, not "it was free".
  warm_up(redis, {{"unlock", "w", "--force"}});
  REQUIRE(rlock(redis, {"lock", "F", "--owner", "x"}).status == 0);
  proxy.lose("{F}", Loss::kReply);
  auto r4 = via(proxy, {"unlock", "F", "--force"});
  INFO("stdout: " << r4.out << "\nstderr: " << r4.err);
  CHECK(proxy.losses() == 4);
  CHECK(r4.status == 0);
  CHECK(parse_json(r4.out) == json{{"name", "F"},
                                   {"forced", true},
                                   {"holders", json::array({json{{"owner", "x"}, {"count", 1}}})}});
}

TEST_CASE("lost reply: sem release --permit reports this call's release, not 'not held'") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  auto a = rlock(redis, {"sem", "acquire", "S", "--permits", "2", "--owner", "a"});
  REQUIRE(a.status == 0);
  std::string permit = parse_json(a.out)["permits"][0].get<std::string>();
  auto w = rlock(redis, {"sem", "acquire", "W", "--permits", "2", "--owner", "a"});
  warm_up(redis, {{"sem", "release", "W", "--permit",
                   parse_json(w.out)["permits"][0].get<std::string>()}});

  proxy.lose(permit, Loss::kReply);
  auto r = via(proxy, {"sem", "release", "S", "--permit", permit});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) == json{{"name", "S"}, {"released", 1}, {"not_held", json::array()}});
}

TEST_CASE("lost reply: latch count-down reports what the first run applied and reached") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  warm_up(redis, {{"latch", "set", "w", "5"}, {"latch", "count-down", "w"}});
  REQUIRE(rlock(redis, {"latch", "set", "L", "2"}).status == 0);

  proxy.lose("part-one", Loss::kReply);
  auto r = via(proxy, {"latch", "count-down", "L", "--id", "part-one"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK(parse_json(r.out) == json{{"name", "L"},
                                  {"count", 1},
                                  {"applied", 1},
                                  {"reached", false},
                                  {"id", "part-one"},
                                  {"repeated", false}});

  // Without an id: once, and the call that opened the latch says so.
  proxy.lose("{L}", Loss::kReply);
  auto r2 = via(proxy, {"latch", "count-down", "L"});
  INFO("stdout: " << r2.out << "\nstderr: " << r2.err);
  CHECK(proxy.losses() == 2);
  CHECK(r2.status == 0);
  CHECK(parse_json(r2.out) == json{{"name", "L"},
                                   {"count", 0},
                                   {"applied", 1},
                                   {"reached", true},
                                   {"id", nullptr},
                                   {"repeated", false}});
}

TEST_CASE("lost reply: limit, latch set and delay-push report their effect, never exit 69") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  warm_up(redis, {{"limit", "w", "--rate", "1", "--per", "1h"},
                  {"latch", "set", "w", "1"},
                  {"delay-push", "w", "--delay", "1h", "x"}});

  proxy.lose("{K}", Loss::kReply);
  auto r = via(proxy, {"limit", "K", "--rate", "1", "--per", "1h"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK(parse_json(r.out)["allowed"] == true);
  // It counted once: the next call is refused.
  CHECK(rlock(redis, {"limit", "K", "--rate", "1", "--per", "1h"}).status == 75);

  proxy.lose("{T}", Loss::kReply);
  auto r2 = via(proxy, {"latch", "set", "T", "3"});
  INFO("stdout: " << r2.out << "\nstderr: " << r2.err);
  CHECK(proxy.losses() == 2);
  CHECK(r2.status == 0);
  CHECK(parse_json(r2.out) ==
        json{{"name", "T"}, {"count", 3}, {"ttl_ms", -1}, {"previous", nullptr}});

  for (bool with_id : {false, true}) {
    CAPTURE(with_id);
    std::string q = with_id ? "qi" : "qn";
    proxy.lose("{" + q + "}", Loss::kReply);
    std::vector<std::string> args = {"delay-push", q, "--delay", "1h"};
    if (with_id) args.insert(args.end(), {"--id", "item-1"});
    args.push_back("payload");
    auto p = via(proxy, args);
    INFO("stdout: " << p.out << "\nstderr: " << p.err);
    CHECK(p.status == 0);
    CHECK(parse_json(p.out)["duplicate"] == false);
    CHECK(redis.cmd_int({"ZCARD", "rlock:queue:{" + q + "}:sched"}) == 1);
  }
  CHECK(proxy.losses() == 4);
}

TEST_CASE("lost reply: delay-pop -- CMD runs the item it leased, and a stuck ack is repeated") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  warm_up(redis, {{"delay-push", "w", "--delay", "0", "x"}, {"delay-pop", "w", "--", "true"}});
  REQUIRE(rlock(redis, {"delay-push", "Q", "--delay", "0", "--id", "one", "hello"}).status == 0);

  // The lease-pop's reply is lost: its repeat returns the same delivery, which runs once.
  proxy.lose("lease", Loss::kReply);
  auto r = via(proxy, {"delay-pop", "Q", "--max-deliveries", "1", "--", "sh", "-c",
                       "cat; echo \" $RLOCK_DELIVERIES\""});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK(r.out == "hello 1\n");
  CHECK(redis.cmd_int({"LLEN", "rlock:queue:{Q}:dead"}) == 0);
  CHECK(redis.cmd_int({"EXISTS", "rlock:queue:{Q}:items"}) == 0);

  // The acknowledgement's reply never comes (a dead flow): repeated on a fresh connection
  // within --timeout, so the item is done and no other consumer runs it again.
  REQUIRE(rlock(redis, {"delay-push", "Q", "--delay", "0", "--id", "two", "again"}).status == 0);
  proxy.lose("ack", Loss::kStalledReply);
  auto r2 = via(proxy, {"--timeout", "2s", "delay-pop", "Q", "--", "cat"});
  INFO("stdout: " << r2.out << "\nstderr: " << r2.err);
  CHECK(proxy.losses() == 2);
  CHECK(r2.status == 0);
  CHECK(r2.out == "again");
  CHECK(r2.err.empty());
  CHECK(redis.cmd_int({"EXISTS", "rlock:queue:{Q}:items"}) == 0);
  CHECK(redis.cmd_int({"ZCARD", "rlock:queue:{Q}:inflight"}) == 0);
}

TEST_CASE("lost reply: delay-pop -- CMD whose ack loses two replies in a row reports it done") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  warm_up(redis, {{"delay-push", "w", "--delay", "0", "x"}, {"delay-pop", "w", "--", "true"}});
  REQUIRE(rlock(redis, {"delay-push", "Q", "--delay", "0", "--id", "one", "hello"}).status == 0);
  // The acknowledgement runs; its reply is lost, and so is the reply of its repeat (which
  // found it done): the third try must still be told it went through.
  proxy.lose("ack", Loss::kReply, 2);
  auto r = via(proxy, {"delay-pop", "Q", "--", "cat"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 2);
  CHECK(r.status == 0);
  CHECK(r.out == "hello");
  CHECK(r.err.empty());
  CHECK(redis.cmd_int({"EXISTS", "rlock:queue:{Q}:items"}) == 0);
  CHECK(redis.cmd_int({"ZCARD", "rlock:queue:{Q}:inflight"}) == 0);
  // Its consumer forgot the finished token once it had a reply.
  CHECK(redis.cmd_int({"ZCARD", "rlock:queue:{Q}:finished"}) == 0);
}

TEST_CASE("reply records live --timeout plus 2s, at least 5s, not a minute") {
  RedisServer redis;
  auto record_pttl = [&](const std::string& name) {
    auto keys = redis.cmd({"KEYS", "rlock:req:{" + name + "}:*"});
    REQUIRE(keys.size() == 1);
    return redis.cmd_int({"PTTL", keys.front()});
  };
  REQUIRE(
      rlock(redis, {"--timeout", "1s", "limit", "l1", "--rate", "1000", "--per", "1s"}).status ==
      0);
  auto short_life = record_pttl("l1");
  CHECK(short_life > 0);
  CHECK(short_life <= 5000);  // the floor: 1s + 2s is less
  REQUIRE(
      rlock(redis, {"--timeout", "10s", "limit", "l2", "--rate", "1000", "--per", "1s"}).status ==
      0);
  auto long_life = record_pttl("l2");
  CHECK(long_life > 5000);
  CHECK(long_life <= 12000);  // 10s + 2s
  // Every other kind of record goes by the same rule.
  REQUIRE(rlock(redis, {"--timeout", "1s", "delay-push", "q", "p", "--delay", "1h"}).status == 0);
  CHECK(record_pttl("q") <= 5000);
  REQUIRE(rlock(redis, {"lock", "L", "--owner", "a"}).status == 0);
  REQUIRE(rlock(redis, {"--timeout", "1s", "unlock", "L", "--owner", "a"}).status == 0);
  CHECK(record_pttl("L") <= 5000);
  REQUIRE(rlock(redis, {"sem", "acquire", "S", "--permits", "1", "--owner", "a"}).status == 0);
  REQUIRE(rlock(redis, {"--timeout", "1s", "sem", "release", "S", "--force"}).status == 0);
  CHECK(record_pttl("S") <= 5000);
  REQUIRE(rlock(redis, {"--timeout", "1s", "latch", "set", "T", "2"}).status == 0);
  CHECK(record_pttl("T") <= 5000);
}

TEST_CASE("--timeout bounds lock, exec, sem and shared forms against a stalled server") {
  RedisServer redis;
  // The scripts are cached: a stalled server is the only thing in the way.
  warm_up(redis, {{"exec", "w", "--", "true"},
                  {"exec", "--shared", "w", "--", "true"},
                  {"sem", "exec", "w", "--permits", "1", "--", "true"}});
  const std::vector<std::vector<std::string>> commands = {
      {"lock", "L", "--owner", "a"},
      {"lock", "--shared", "L", "--owner", "a"},
      {"exec", "L", "--", "true"},
      {"exec", "--shared", "L", "--", "true"},
      {"sem", "acquire", "S", "--permits", "2"},
      {"sem", "exec", "S", "--permits", "2", "--", "true"},
  };
  for (const auto& c : commands) {
    CAPTURE(c);
    redis.freeze();
    std::vector<std::string> args = {"--timeout", "1s"};
    args.insert(args.end(), c.begin(), c.end());
    auto r = rlock(redis, args);
    redis.thaw();
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 69);
    // The documented margin is 200 ms; the rest is slack for a busy machine.
    CHECK(r.elapsed < 1700ms);
    // The clean-up reached the stalled server, which ran it when it resumed.
    CHECK(poll_until(
        [&] {
          return redis.cmd_int({"EXISTS", lock_key("L"), "rlock:sem:{S}"}) == 0;
        },
        5s));
    CHECK(redis.cmd_int({"EXISTS", "rlock:lock-readers:{L}"}) == 0);
  }
}

}  // namespace
}  // namespace rlock::test
