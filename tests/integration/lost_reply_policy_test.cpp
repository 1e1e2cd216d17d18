// Lost replies of issue 34's requests: an exec --once-per claim, a --supersede wait and a
// pool's member request whose reply is dropped with the connection are repeated under the
// same request id, and the repeat is taken for the first run: the slot is claimed once and
// its job runs once, a waiter never supersedes itself, a pool member taken is taken once
// and given back at the end.
#include <doctest/doctest.h>

#include "failover_jobs.hpp"
#include "harness.hpp"
#include "lossy_proxy.hpp"

namespace rlock::test {
namespace {

using Loss = LossyProxy::Loss;

RunResult via(const LossyProxy& proxy, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"--url", proxy.url()};
  argv.insert(argv.end(), args.begin(), args.end());
  return rlock_raw(argv);
}

// Scripts are cached first, so that the lost request is the script itself, not an EVALSHA
// answered NOSCRIPT.
void warm_up(const RedisServer& redis, const std::vector<std::vector<std::string>>& commands) {
  for (const auto& c : commands) rlock(redis, c);
}

TEST_CASE("lost reply: an exec --once-per claim repeated claims its own slot; the job runs once") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  TempDir dir;
  const std::string ran = dir / "ran";
  write_file(ran, "");
  warm_up(redis, {{"exec", "--once-per", "1d", "w", "--", "true"}});

  proxy.lose("{O}", Loss::kReply);
  auto r = via(proxy, {"exec", "--once-per", "1d", "O", "--", "sh", "-c", "echo x >> " + ran});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK(read_file(ran) == "x\n");
  auto runs = redis.cmd({"LRANGE", "rlock:runs:{O}", "0", "-1"});
  REQUIRE(runs.size() == 1);
  CHECK(parse_json(runs[0])["status"] == "exited");
  // The slot is taken: another host in it is busy at once.
  CHECK(rlock(redis, {"exec", "--once-per", "1d", "O", "--", "true"}).status == 75);
  CHECK(read_file(ran) == "x\n");
}

TEST_CASE(
    "lost reply: a --supersede waiter whose queueing reply is lost does not supersede "
    "itself, and a newer one still supersedes it") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  warm_up(redis, {{"lock", "w", "--owner", "h"},
                  {"exec", "--supersede", "--no-wait", "w", "--", "true"},
                  {"unlock", "w", "--owner", "h"}});
  REQUIRE(rlock(redis, {"lock", "S", "--owner", "holder", "--lease", "60s"}).status == 0);

  proxy.lose("{S}", Loss::kReply);
  Spawned a = spawn_on(proxy.url(), {"exec", "--wait", "60s", "--owner", "a", "--supersede", "S",
                                     "--", "sh", "-c", "echo a >> " + order});
  REQUIRE(
      poll_until([&] { return proxy.losses() == 1 && live_waiters(redis, "S") == 1; }, 10s, 2ms));
  // Still waiting after its repeat: a later inspect shows it queued, not superseded.
  REQUIRE(poll_until(
      [&] {
        return rlock(redis, {"inspect", "S"}).out.find("\"a\"") != std::string::npos;
      },
      10s, 10ms));
  CHECK_FALSE(a.wait(deadline(300ms)).has_value());

  Spawned b = spawn_rlock(redis, {"exec", "--wait", "60s", "--owner", "b", "--supersede", "S", "--",
                                  "sh", "-c", "echo b >> " + order});
  CHECK(a.wait(deadline(10s)).value_or(kStillRunning) == 79);
  INFO("a stderr: " << a.err());
  CHECK(a.err().find("owner 'b'") != std::string::npos);
  REQUIRE(rlock(redis, {"unlock", "S", "--owner", "holder"}).status == 0);
  CHECK(b.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(read_file(order) == "b\n");
  CHECK(live_waiters(redis, "S") == 0);
}

TEST_CASE(
    "lost reply: a pool member's request repeated takes that member once, and the pool "
    "leaves nothing held") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  warm_up(redis, {{"exec", "--one-of", "w1", "w2", "--", "true"}});

  proxy.lose("{P1}", Loss::kReply);
  auto r = via(proxy, {"exec", "--one-of", "P1", "P2", "--", "sh", "-c", "echo $RLOCK_NAME"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(proxy.losses() == 1);
  CHECK(r.status == 0);
  CHECK((r.out == "P1\n" || r.out == "P2\n"));
  for (const char* m : {"P1", "P2"}) {
    CAPTURE(m);
    CHECK(redis.cmd_int({"EXISTS", lock_key(m)}) == 0);
    CHECK(live_waiters(redis, m) == 0);
  }
  // Both members are free for the next taker at once.
  CHECK(rlock(redis, {"lock", "P1", "--no-wait", "--owner", "x"}).status == 0);
  CHECK(rlock(redis, {"lock", "P2", "--no-wait", "--owner", "x"}).status == 0);
}

}  // namespace
}  // namespace rlock::test
