// Pools (`exec --one-of A B C -- CMD`, `lock --one-of A B C`): whichever member is free
// first. A pool's waiter queues in every member's queue, so a release of any member goes to
// the pool's longest-waiting waiter and a later direct request for one member queues
// behind it. "a", "b" and "c" hash to different cluster slots: on a cluster each member's
// queue is on its own node.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "harness.hpp"

namespace rlock::test {
namespace {

const std::vector<std::string> kPool = {"a", "b", "c"};

// Held on a majority of a quorum's members (a member that missed the hold, or whose release
// is still on its way, does not decide it); on one server, held there.
bool held(const RedisServer& redis, const std::string& name) {
  return redis.on_majority({"EXISTS", lock_key(name)}) == 1;
}

// The owners queued for `name` on any server (an entry is "<lease>:<kind>:<wait id>:<owner>").
std::set<std::string> waiting_owners(const RedisServer& redis, const std::string& name) {
  std::set<std::string> owners;
  for (const RedisServer* m : redis.members()) {
    for (const std::string& e : m->cmd({"ZRANGE", lock_key(name) + ":waiters", "0", "-1"})) {
      const size_t kind = e.find(':'), id = e.find(':', kind + 1), owner = e.find(':', id + 1);
      if (owner != std::string::npos) owners.insert(e.substr(owner + 1));
    }
  }
  return owners;
}

// Whether `member` holds `name`, exclusively or shared, for someone not in `waiting`.
bool held_for_others(const RedisServer& member, const std::string& name,
                     const std::set<std::string>& waiting) {
  const json holders = hash_of(member, lock_key(name));
  for (const auto& holder : holders.items()) {
    if (!waiting.count(holder.key())) return true;
  }
  // A reader's field is its owner, an exec --shared's followed by "\x1f" and its hold id.
  const json readers = hash_of(member, "rlock:lock-readers:{" + name + "}");
  for (const auto& reader : readers.items()) {
    if (!waiting.count(reader.key().substr(0, reader.key().find('\x1f')))) return true;
  }
  return false;
}

// The live waiters of `name` (live_waiters_here) that every server holding it for someone
// else has, the fewest; -1 while those servers are fewer than a majority. Only there can a
// waiter queue: a quorum member that missed a hold has the lock free (the earlier holder's
// release ran there only after the new holder had claimed a majority and stopped listening,
// so the member dropped it from its queue as dead; or the grant never reached it), and a
// waiter takes it there and gives it back at once instead of queueing (a minority grant is
// no hold: nothing runs on it). On one server: that server's.
long long queued(const RedisServer& redis, const std::string& name) {
  const std::set<std::string> waiting = waiting_owners(redis, name);
  const std::vector<const RedisServer*> members = redis.members();
  long long fewest = -1;
  size_t holding = 0;
  for (const RedisServer* m : members) {
    if (!held_for_others(*m, name, waiting)) continue;
    ++holding;
    const long long here = live_waiters_here(*m, name);
    fewest = fewest < 0 ? here : std::min(fewest, here);
  }
  return holding > members.size() / 2 ? fewest : -1;
}

// Each member has `n` live waiters queued wherever it is held (see queued).
bool queued_everywhere(const RedisServer& redis, long long n) {
  return poll_until(
      [&] {
        for (const auto& m : kPool) {
          if (queued(redis, m) != n) return false;
        }
        return true;
      },
      10s, 2ms);
}

std::vector<std::string> pool_exec(const std::vector<std::string>& flags,
                                   const std::string& script) {
  std::vector<std::string> args = {"exec", "--one-of"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), kPool.begin(), kPool.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  return args;
}

// A job that says which member it got, then holds it until killed or its stdin... sleeps.
const std::string kSayAndHold = "echo \"$RLOCK_NAME $RLOCK_NAMES\"; exec sleep 60";

// Holds every member but `except` with `lock` for owner "direct".
void hold_all_but(const RedisServer& redis, const std::string& except) {
  for (const auto& m : kPool) {
    if (m != except)
      REQUIRE(rlock(redis, {"lock", m, "--owner", "direct", "--lease", "60s"}).status == 0);
  }
}

TEST_CASE("pool: with two members held directly, --one-of takes the third and names it") {
  RedisServer redis;
  for (const auto& free_one : kPool) {
    CAPTURE(free_one);
    hold_all_but(redis, free_one);
    auto r = rlock(redis, pool_exec({}, "echo \"$RLOCK_NAME|$RLOCK_NAMES|$RLOCK_FENCE\""));
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    const std::string fence = std::to_string(redis.cmd_int({"GET", fence_key(free_one)}));
    CHECK(r.out == free_one + "|" + free_one + "|" + fence + "\n");
    CHECK_FALSE(held(redis, free_one));  // released when the job ended
    // Nothing stays queued on the members it did not take.
    for (const auto& m : kPool) CHECK(redis.cmd_int({"EXISTS", lock_key(m) + ":waiters"}) == 0);

    // `lock --one-of` prints the member it took; `unlock NAME` releases it as any lock.
    r = rlock(redis, {"lock", "--one-of", "a", "b", "c", "--owner", "pooled"});
    REQUIRE(r.status == 0);
    auto j = parse_json(r.out);
    CHECK(j["name"] == free_one);
    CHECK(j["acquired"] == true);
    CHECK(j["fence"] == redis.cmd_int({"GET", fence_key(free_one)}));
    CHECK(hash_of(redis, lock_key(free_one)) == json::object({{"pooled", "1"}}));
    // Now every member is busy: 75 at once, nothing held or queued, all holders named.
    r = rlock(redis, pool_exec({}, "echo ran"));
    CHECK(r.status == 75);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("every one of locks 'a', 'b' and 'c' is held") != std::string::npos);
    CHECK(r.err.find("pooled") != std::string::npos);
    r = rlock(redis, {"lock", "--one-of", "a", "b", "c", "--owner", "late"});
    CHECK(r.status == 75);
    j = parse_json(r.out);
    CHECK(j["acquired"] == false);
    CHECK(j["one_of"] == json::array({"a", "b", "c"}));
    CHECK(j["holders"].size() == 3);
    REQUIRE(rlock(redis, {"unlock", free_one, "--owner", "pooled"}).status == 0);
    for (const auto& m : kPool) {
      if (m != free_one) REQUIRE(rlock(redis, {"unlock", m, "--owner", "direct"}).status == 0);
    }
  }
}

TEST_CASE("pool: a queued pool waiter gets whichever member is released first") {
  RedisServer redis;
  for (const auto& freed : kPool) {
    CAPTURE(freed);
    hold_all_but(redis, "");
    auto waiter = spawn_rlock(redis, pool_exec({"--wait", "30s"}, kSayAndHold));
    REQUIRE(queued_everywhere(redis, 1));
    REQUIRE(rlock(redis, {"unlock", freed, "--owner", "direct"}).status == 0);
    CHECK(waiter.read_line(deadline(10s)) == std::optional<std::string>(freed + " " + freed));
    // It leaves the other members' queues once the job started.
    CHECK(poll_until(
        [&] {
          for (const auto& m : kPool) {
            if (live_waiters(redis, m) != 0 || redis.cmd_int({"EXISTS", lock_key(m) + ":waiters"}))
              return false;
          }
          return true;
        },
        10s, 2ms));
    CHECK(hash_of(redis, lock_key(freed)).size() == 1);
    waiter.kill(SIGTERM);
    CHECK(waiter.wait(deadline(10s)).has_value());
    REQUIRE(poll_until([&] { return !held(redis, freed); }, 10s));
    for (const auto& m : kPool) {
      if (m != freed) REQUIRE(rlock(redis, {"unlock", m, "--owner", "direct"}).status == 0);
    }
  }
}

TEST_CASE("pool: pool waiters are served in arrival order, whichever member frees") {
  RedisServer redis;
  hold_all_but(redis, "");
  TempDir dir;
  const std::string order = dir / "order";
  write_file(order, "");
  std::vector<Spawned> waiters;
  const int n = 4;
  for (int i = 0; i < n; ++i) {
    // Each holds what it got until the test frees the next member: "<i> <member>" a line.
    waiters.push_back(spawn_rlock(
        redis, pool_exec({"--wait", "60s"}, "echo " + std::to_string(i) + " \"$RLOCK_NAME\" >> " +
                                                order + "; exec sleep 60")));
    REQUIRE(queued_everywhere(redis, i + 1));
  }
  // Members freed in the order c, a, b, then c again (the first waiter's job ends).
  auto lines = [&] {
    std::istringstream in(read_file(order));
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  REQUIRE(rlock(redis, {"unlock", "c", "--owner", "direct"}).status == 0);
  REQUIRE(poll_until([&] { return lines().size() == 1; }, 10s));
  REQUIRE(rlock(redis, {"unlock", "a", "--owner", "direct"}).status == 0);
  REQUIRE(poll_until([&] { return lines().size() == 2; }, 10s));
  REQUIRE(rlock(redis, {"unlock", "b", "--owner", "direct"}).status == 0);
  REQUIRE(poll_until([&] { return lines().size() == 3; }, 10s));
  waiters[0].kill(SIGTERM);
  REQUIRE(poll_until([&] { return lines().size() == 4; }, 10s));
  CHECK(lines() == std::vector<std::string>{"0 c", "1 a", "2 b", "3 c"});
  for (auto& w : waiters) w.kill(SIGTERM);
  for (auto& w : waiters) CHECK(w.wait(deadline(10s)).has_value());
}

TEST_CASE("pool: a direct taker of one member queues behind the pool's waiter") {
  RedisServer redis;
  hold_all_but(redis, "");
  auto pooled = spawn_rlock(redis, pool_exec({"--wait", "30s"}, kSayAndHold));
  REQUIRE(queued_everywhere(redis, 1));
  auto direct = spawn_rlock(
      redis, {"exec", "--wait", "30s", "b", "--", "sh", "-c", "echo direct; exec sleep 60"});
  REQUIRE(poll_until([&] { return queued(redis, "b") == 2; }, 10s, 2ms));
  REQUIRE(rlock(redis, {"unlock", "b", "--owner", "direct"}).status == 0);
  CHECK(pooled.read_line(deadline(10s)) == std::optional<std::string>("b b"));
  CHECK(direct.running());
  CHECK(queued(redis, "b") == 1);
  // Only once the pool's job ends does the direct taker get b.
  pooled.kill(SIGTERM);
  CHECK(direct.read_line(deadline(10s)) == std::optional<std::string>("direct"));
  direct.kill(SIGTERM);
  CHECK(pooled.wait(deadline(10s)).has_value());
  CHECK(direct.wait(deadline(10s)).has_value());
}

TEST_CASE(
    "pool: a member's holder SIGKILLed frees that member for the pool's head within its lease") {
  RedisServer redis;
  std::vector<Spawned> holders;
  for (const auto& m : kPool) {
    holders.push_back(spawn_rlock(redis, {"exec", "--lease", "1s", "--owner", "holder-" + m, m,
                                          "--", "sh", "-c", "echo in; exec sleep 60"}));
    REQUIRE(holders.back().read_line(deadline(10s)) == std::optional<std::string>("in"));
  }
  auto waiter = spawn_rlock(redis, pool_exec({"--wait", "30s"}, kSayAndHold));
  REQUIRE(queued_everywhere(redis, 1));
  const auto killed = Clock::now();
  holders[1].kill(SIGKILL);
  CHECK(waiter.read_line(deadline(10s)) == std::optional<std::string>("b b"));
  // Its lease (1s) and the waiter's retry at the expiry it saw, with a margin for a slow host.
  CHECK(Clock::now() - killed < 3s);
  waiter.kill(SIGTERM);
  for (auto& h : holders) h.kill(SIGTERM);
  CHECK(waiter.wait(deadline(10s)).has_value());
}

TEST_CASE("pool: a pool waiter stopped while granted holds the pool up for the claim window only") {
  RedisServer redis;
  hold_all_but(redis, "");
  auto stopped = spawn_rlock(redis, pool_exec({"--wait", "30s"}, kSayAndHold));
  REQUIRE(queued_everywhere(redis, 1));
  auto next = spawn_rlock(redis, pool_exec({"--wait", "30s"}, kSayAndHold));
  REQUIRE(queued_everywhere(redis, 2));
  stopped.kill(SIGSTOP);
  const auto freed = Clock::now();
  REQUIRE(rlock(redis, {"unlock", "a", "--owner", "direct"}).status == 0);
  CHECK(next.read_line(deadline(10s)) == std::optional<std::string>("a a"));
  CHECK(Clock::now() - freed < 5s);  // the claim window (2s) and a margin
  stopped.kill(SIGCONT);
  // Continued, it takes nothing next holds: it waits on, and gets the next member freed.
  REQUIRE(rlock(redis, {"unlock", "c", "--owner", "direct"}).status == 0);
  CHECK(stopped.read_line(deadline(10s)) == std::optional<std::string>("c c"));
  CHECK(hash_of(redis, lock_key("a")).size() == 1);
  stopped.kill(SIGTERM);
  next.kill(SIGTERM);
  CHECK(stopped.wait(deadline(10s)).has_value());
  CHECK(next.wait(deadline(10s)).has_value());
}

TEST_CASE("pool: --count 2 takes two members, in sorted order, and waiters cannot deadlock") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "a", "--owner", "direct", "--lease", "60s"}).status == 0);
  auto r = rlock(redis, pool_exec({"--count", "2"}, "echo \"$RLOCK_NAME|$RLOCK_NAMES\""));
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "b|b,c\n");
  r = rlock(redis, {"lock", "--one-of", "--count", "2", "a", "b", "c", "--owner", "two"});
  REQUIRE(r.status == 0);
  auto j = parse_json(r.out);
  CHECK(j["locks"].size() == 2);
  CHECK(j["locks"][0]["name"] == "b");
  CHECK(j["locks"][1]["name"] == "c");
  r = rlock(redis, pool_exec({"--count", "2"}, "echo ran"));
  CHECK(r.status == 75);
  CHECK(r.err.find("fewer than 2 of locks 'a', 'b' and 'c' are free") != std::string::npos);
  REQUIRE(rlock(redis, {"unlock", "b", "c", "--owner", "two"}).status == 0);

  // Two K=2 waiters with every member busy: each only ever waits for members after those it
  // holds, so the first completes and the second follows, never one member each for ever.
  hold_all_but(redis, "a");
  auto first = spawn_rlock(redis, pool_exec({"--wait", "30s", "--count", "2"}, kSayAndHold));
  REQUIRE(poll_until([&] { return queued(redis, "b") == 1; }, 10s, 2ms));
  auto second = spawn_rlock(redis, pool_exec({"--wait", "30s", "--count", "2"}, kSayAndHold));
  REQUIRE(poll_until([&] { return queued(redis, "b") == 2; }, 10s, 2ms));
  REQUIRE(rlock(redis, {"unlock", "c", "--owner", "direct"}).status == 0);  // nobody waits on c yet
  REQUIRE(rlock(redis, {"unlock", "b", "--owner", "direct"}).status == 0);
  CHECK(first.read_line(deadline(10s)) == std::optional<std::string>("b b,c"));
  REQUIRE(rlock(redis, {"unlock", "a", "--owner", "direct"}).status == 0);
  REQUIRE(poll_until([&] { return queued(redis, "b") == 1 && held(redis, "a"); }, 10s, 2ms));
  CHECK(second.running());
  first.kill(SIGTERM);
  // first releases c, then b (the last taken first): second takes whichever comes first.
  const auto second_got = second.read_line(deadline(10s));
  CHECK((second_got == std::optional<std::string>("a a,b") ||
         second_got == std::optional<std::string>("a a,c")));
  CHECK(first.wait(deadline(10s)).has_value());
  second.kill(SIGTERM);
  CHECK(second.wait(deadline(10s)).has_value());
}

TEST_CASE("pool: --shared readers of a pool share a member; a writer's member is busy for them") {
  RedisServer redis;
  // Free: readers take the first member together.
  auto first = spawn_rlock(redis, pool_exec({"--shared"}, kSayAndHold));
  CHECK(first.read_line(deadline(10s)) == std::optional<std::string>("a a"));
  auto second = spawn_rlock(redis, pool_exec({"--shared"}, kSayAndHold));
  CHECK(second.read_line(deadline(10s)) == std::optional<std::string>("a a"));
  // A direct writer of a queues behind the readers; a reader of the pool that comes later
  // does not overtake that writer on a: it takes b.
  auto writer = spawn_rlock(
      redis, {"exec", "--wait", "30s", "a", "--", "sh", "-c", "echo writer; exec sleep 60"});
  REQUIRE(poll_until([&] { return queued(redis, "a") == 1; }, 10s, 2ms));
  auto third = spawn_rlock(redis, pool_exec({"--shared"}, kSayAndHold));
  CHECK(third.read_line(deadline(10s)) == std::optional<std::string>("b b"));
  for (auto* p : {&first, &second, &third}) p->kill(SIGTERM);
  CHECK(writer.read_line(deadline(10s)) == std::optional<std::string>("writer"));
  // The third reader gives b back before it exits: the direct hold of b below finds it free.
  REQUIRE(Spawned::wait_all({&first, &second, &third}, deadline(10s)));

  // Every member held exclusively: a reader of the pool waits, and gets the first freed. (On
  // a quorum a member may have missed the writer's hold or one below: see queued.)
  REQUIRE(rlock(redis, {"lock", "b", "--owner", "direct", "--lease", "60s"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "c", "--owner", "direct", "--lease", "60s"}).status == 0);
  auto reader = spawn_rlock(redis, pool_exec({"--shared", "--wait", "30s"}, kSayAndHold));
  REQUIRE(queued_everywhere(redis, 1));
  CHECK(reader.running());
  REQUIRE(rlock(redis, {"unlock", "c", "--owner", "direct"}).status == 0);
  // Its first line: it ran on nothing a majority held exclusively meanwhile.
  CHECK(reader.read_line(deadline(10s)) == std::optional<std::string>("c c"));
  for (auto* p : {&first, &second, &third, &writer, &reader}) {
    p->kill(SIGTERM);
    CHECK(p->wait(deadline(10s)).has_value());
  }
}

TEST_CASE("pool: a member free on a quorum's minority only is busy for the pool (runs nothing)") {
  RedisServer redis;
  const std::vector<const RedisServer*> members = redis.members();
  // On one server there is no minority to miss a hold.
  if (members.size() < 3) return;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, std::vector<std::string>{"--shared"}}) {
    CAPTURE(flags);
    hold_all_but(redis, "");
    // The last member missed the hold of a: as if its grant had never reached it.
    members.back()->cmd({"DEL", lock_key("a"), lock_key("a") + ":notes"});
    REQUIRE(held(redis, "a"));
    std::vector<std::string> wait = flags;
    wait.insert(wait.end(), {"--wait", "30s"});
    auto waiter = spawn_rlock(redis, pool_exec(wait, kSayAndHold));
    REQUIRE(queued_everywhere(redis, 1));
    // Where a is free, the waiter took it and gave it back: it is not queued there.
    CHECK(live_waiters_here(*members.back(), "a") == 0);
    CHECK(waiter.running());
    REQUIRE(rlock(redis, {"unlock", "c", "--owner", "direct"}).status == 0);
    CHECK(waiter.read_line(deadline(10s)) == std::optional<std::string>("c c"));
    waiter.kill(SIGTERM);
    CHECK(waiter.wait(deadline(10s)).has_value());
    for (const std::string m : {"a", "b"})
      REQUIRE(rlock(redis, {"unlock", m, "--owner", "direct"}).status == 0);
    REQUIRE(poll_until([&] { return !held(redis, "c"); }, 10s));
  }
}

TEST_CASE("pool: bad inputs exit 64 and write nothing") {
  RedisServer redis;
  const auto before = snapshot(redis);
  const std::vector<std::vector<std::string>> cases = {
      {"exec", "--one-of", "--", "true"},
      {"lock", "--one-of"},
      {"exec", "--one-of", "a", "b", "a", "--", "true"},
      {"lock", "--one-of", "a", "a"},
      {"exec", "--one-of", "--count", "0", "a", "b", "c", "--", "true"},
      {"exec", "--one-of", "--count", "4", "a", "b", "c", "--", "true"},
      {"lock", "--one-of", "--count", "x", "a", "b"},
      {"lock", "--count", "2", "a", "b"},
  };
  for (const auto& args : cases) {
    CAPTURE(args);
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) >= 1);
  }
  CHECK(snapshot(redis) == before);
}

TEST_CASE("pool: --note goes with the member taken, and with the pool's queue entries") {
  RedisServer redis;
  hold_all_but(redis, "b");
  auto r =
      rlock(redis, {"lock", "--one-of", "--owner", "p", "--note", "release freeze", "a", "b", "c"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out)["name"] == "b");
  // A quorum lists the lock once per member: each must say it.
  auto shown = parse_json(rlock(redis, {"inspect", "--type", "lock", "b"}).out);
  REQUIRE(shown.size() == redis.members().size());
  for (const auto& lock : shown) {
    CHECK(lock["holders"][0]["owner"] == "p");
    CHECK(lock["holders"][0]["note"] == "release freeze");
  }
  // Queued on every member: each queue entry says it.
  Spawned waiter = spawn_rlock(redis, {"lock", "--one-of", "--wait", "30s", "--owner", "w",
                                       "--note", "next in line", "a", "b", "c"});
  REQUIRE(queued_everywhere(redis, 1));
  for (const auto& m : kPool) {
    CAPTURE(m);
    auto listed = parse_json(rlock(redis, {"inspect", "--type", "lock", m}).out);
    REQUIRE(listed.size() == redis.members().size());
    for (const auto& lock : listed) {
      REQUIRE(lock["waiters"].size() == 1);
      CHECK(lock["waiters"][0]["note"] == "next in line");
    }
  }
  REQUIRE(rlock(redis, {"unlock", "c", "--owner", "direct"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(parse_json(waiter.out())["name"] == "c");
}

TEST_CASE("pool: a member held by the exec it runs under is skipped; all of them, refused (65)") {
  RedisServer redis;
  const Env env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}};
  const std::string inner =
      R"("$RL" --url "$URL" exec --wait 10s --one-of a b c -- sh -c 'echo "$RLOCK_NAME"')";
  // Inside the hold of a: the pool takes b (never a, which only that exec's end could free).
  auto r = rlock(redis, {"exec", "a", "--", "sh", "-c", inner}, env, 30s);
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "b\n");
  // Inside holds of all three: it would wait for itself, whatever --wait says.
  const auto started = Clock::now();
  r = rlock(redis, {"exec", "a", "b", "c", "--", "sh", "-c", inner}, env, 30s);
  CHECK(r.status == 65);
  CHECK(r.out.empty());
  CHECK(r.err.find("would wait for itself") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(ms_between(started) < 8000);
  for (const auto& m : kPool) CHECK_FALSE(held(redis, m));
}

}  // namespace
}  // namespace rlock::test
