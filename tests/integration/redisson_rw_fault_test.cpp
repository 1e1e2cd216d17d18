// --layout redisson --redisson-object read-write-lock under faults, against Redisson's own
// RReadWriteLock scripts (redisson_rw_helpers.hpp): a Java holder that stops renewing, an
// rlock SIGSTOPped past its lease, lost replies, a stalled server, and exec's renewals.
#include <doctest/doctest.h>
#include <signal.h>

#include "lossy_proxy.hpp"
#include "redisson_rw_helpers.hpp"

namespace rlock::test {
namespace {

using namespace redisson_rw;

// exec renews a read hold as Redisson's watchdog does (the hash and the hold's lease key):
// a job that runs past several leases keeps Java's writer out all along.
TEST_CASE("redisson rw: exec's renewals keep a read hold past its lease") {
  RedisServer redis;
  Java java{redis, "long"};
  auto job = spawn_rlock(redis, in_rw({"exec", "-s", "--lease", "900ms", "long", "--", "sh", "-c",
                                       "echo go; sleep 3"}));
  REQUIRE(job.read_line(deadline(10s)) == "go");
  CHECK_FALSE(poll_until([&] { return taken(java.write_lock()); }, 2500ms));
  REQUIRE(job.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(redis.cmd_int({"EXISTS", "long"}) == 0);
  CHECK(taken(java.write_lock()));
}

TEST_CASE("redisson rw: a Java holder that stops renewing; Java's renewals of rlock's holds") {
  RedisServer redis;
  Java java{redis, "gone"};
  // Java's writer and then its reader take 1.5 s leases and never renew: rlock's waiter
  // starts its job once the lease ran out (the lease Redisson's script told it), not later.
  for (bool reader : {false, true}) {
    CAPTURE(reader);
    const long long took_at = epoch_ms();
    REQUIRE(taken(reader ? java.read_lock(1500) : java.write_lock(1500)));
    auto job = spawn_rlock(redis, in_rw({"exec", "--wait", "20s", "gone", "--", "date", "+%s%3N"}));
    REQUIRE(job.wait(deadline(15s)).value_or(kStillRunning) == 0);
    const long long after = std::stoll(job.out()) - took_at;
    MESSAGE("Java's 1.5 s lease, not renewed -> rlock's job starts after " << after << " ms");
    CHECK(after >= 1400);
    CHECK(after < 3500);
  }
  // Java's watchdog renews an rlock hold of its field as it renews its own.
  REQUIRE(rlock(redis, in_rw({"lock", "-s", "gone", "--owner", kJava, "--lease", "5s"})).status ==
          0);
  CHECK(eval(redis, "redisson_rw_read_renew.lua", {"gone", "{gone}"}, {"60000", "1", kJava}) ==
        "1\n");
  CHECK(redis.cmd_int({"PTTL", "gone"}) > 30000);
  CHECK(redis.cmd_int({"PTTL", "{gone}:" + kJava + ":rwlock_timeout:1"}) > 30000);
  REQUIRE(rlock(redis, in_rw({"unlock", "-s", "gone", "--owner", kJava})).status == 0);
  REQUIRE(rlock(redis, in_rw({"lock", "gone", "--owner", kJava, "--lease", "5s"})).status == 0);
  CHECK(eval(redis, "redisson_rw_write_renew.lua", {"gone"}, {"60000", kJava + ":write"}) == "1\n");
  CHECK(redis.cmd_int({"PTTL", "gone"}) > 30000);
}

TEST_CASE("redisson rw: a SIGSTOPped rlock's job is stopped before Java gets the lock") {
  RedisServer redis;
  Java java{redis, "stop"};
  for (bool shared : {false, true}) {
    CAPTURE(shared);
    std::vector<std::string> args = {"exec", "--lease", "2s", "--kill-after", "1s"};
    if (shared) args.push_back("-s");
    args.insert(args.end(), {"stop", "--", "sh", "-c", "trap '' TERM; echo $$; exec sleep 60"});
    auto job = spawn_rlock(redis, in_rw(args));
    auto line = job.read_line(deadline(10s));
    REQUIRE(line.has_value());
    PidGuard child(static_cast<pid_t>(std::stol(*line)));
    job.kill(SIGSTOP);
    // Java's writer tries until it gets the lock: the job is dead by then.
    REQUIRE(poll_until([&] { return taken(java.write_lock()); }, 15s));
    CHECK(child.wait_gone(0ms));
    job.kill(SIGCONT);
    CHECK(job.wait(deadline(10s)) == std::optional<int>(76));
    CHECK(java.write_unlock() == "1\n");
  }
}

// A request whose reply is lost is repeated and answered from its reply record: one level
// is taken or dropped, not two (Redisson's own client does not repeat them).
TEST_CASE("redisson rw: a lost reply is repeated, and counts once") {
  RedisServer redis;
  LossyProxy proxy(redis.port());
  // The scripts are cached first: the lost request is the script itself.
  for (const auto& args : {in_rw({"lock", "-s", "warm", "--owner", "o"}),
                           in_rw({"unlock", "-s", "warm", "--owner", "o"})})
    REQUIRE(rlock(redis, args).status == 0);
  auto via = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--url", proxy.url()});
    return rlock_raw(args, {});
  };
  for (bool shared : {true, false}) {
    CAPTURE(shared);
    std::vector<std::string> lock = {"lock", "LR", "--owner", kJava};
    std::vector<std::string> unlock = {"unlock", "LR", "--owner", kJava};
    if (shared) {
      lock.push_back("-s");
      unlock.push_back("-s");
    }
    proxy.lose("{LR}", LossyProxy::Loss::kReply);
    auto r = via(in_rw(lock));
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    CHECK(parse_json(r.out)["count"] == 1);
    const std::string field = shared ? kJava : kJava + ":write";
    CHECK(redis.cmd_str({"HGET", "LR", field}) == "1");
    REQUIRE(rlock(redis, in_rw(lock)).status == 0);
    proxy.lose("{LR}", LossyProxy::Loss::kReply);
    r = via(in_rw(unlock));
    REQUIRE(r.status == 0);
    CHECK(parse_json(r.out)["count"] == 1);
    CHECK(redis.cmd_str({"HGET", "LR", field}) == "1");
    REQUIRE(rlock(redis, in_rw(unlock)).status == 0);
    CHECK(redis.cmd_int({"EXISTS", "LR"}) == 0);
  }
  CHECK(proxy.losses() == 4);
}

// A request sent to a stalled server times out; its clean-up, run when the server resumes,
// gives back what the late request took (or makes it take nothing): no hold is left for
// Java to wait out.
TEST_CASE("redisson rw: --timeout against a stalled server leaves nothing held") {
  RedisServer redis;
  for (const auto& args : {in_rw({"lock", "-s", "warm", "--owner", "o"}),
                           in_rw({"unlock", "-s", "warm", "--owner", "o"})})
    REQUIRE(rlock(redis, args).status == 0);
  for (const auto& c : {in_rw({"--timeout", "1s", "lock", "-s", "F", "--owner", "a"}),
                        in_rw({"--timeout", "1s", "lock", "F", "--owner", "a"}),
                        in_rw({"--timeout", "1s", "exec", "-s", "F", "--", "true"}),
                        in_rw({"--timeout", "1s", "exec", "F", "--", "true"})}) {
    CAPTURE(c);
    redis.freeze();
    auto r = rlock(redis, c);
    redis.thaw();
    INFO("stderr: " << r.err);
    CHECK(r.status == 69);
    CHECK(poll_until([&] { return redis.cmd_int({"EXISTS", "F"}) == 0; }, 5s));
  }
}

}  // namespace
}  // namespace rlock::test
