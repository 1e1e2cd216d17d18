// rlock(1)'s ACL section as a test: the documented rights suffice for every primitive, and
// a user missing any one of them gets one line naming it (exit 77) and changes nothing.
#include "documented_acl.hpp"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace rlock::test {
namespace {

const std::string kMinimalAcl = documented_acl_user();

TEST_CASE("the documented minimal ACL is enough for lock, unlock, exec, waiting and inspect") {
  RedisServer redis(RedisOptions{.config = {kMinimalAcl}});
  const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
  CHECK(rlock_raw({"lock", "m", "--owner", "a"}, as_rl).status == 0);
  auto waiter = Spawned({rlock_binary(), "exec", "--wait", "20s", "m", "--", "echo", "ran"}, as_rl);
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("m") + ":waiters"}) == 1;
      },
      10s));
  auto listed = rlock_raw({"inspect"}, as_rl);
  CHECK(listed.status == 0);
  CHECK(parse_json(listed.out).at(0).at("waiters_total") == 1);
  CHECK(rlock_raw({"unlock", "m", "--owner", "a"}, as_rl).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(waiter.out() == "ran\n");
  CHECK(rlock_raw({"lock", "m", "--owner", "b"}, as_rl).status == 0);
  CHECK(rlock_raw({"unlock", "--force", "m"}, as_rl).status == 0);

  // Semaphores: take, wait queued, hand over, status, renew, release.
  auto taken = rlock_raw({"sem", "acquire", "s", "--permits", "1"}, as_rl);
  REQUIRE(taken.status == 0);
  const std::string id = parse_json(taken.out).at("permits").at(0);
  auto sem_waiter = Spawned(
      {rlock_binary(), "sem", "exec", "--permits", "1", "--wait", "20s", "s", "--", "echo", "ran"},
      as_rl);
  REQUIRE(poll_until([&] { return redis.cmd_int({"ZCARD", "rlock:sem:{s}:waiters"}) == 1; }, 10s));
  CHECK(rlock_raw({"sem", "status", "s"}, as_rl).status == 0);
  CHECK(rlock_raw({"sem", "renew", "s", "--permit", id}, as_rl).status == 0);
  CHECK(rlock_raw({"sem", "release", "s", "--permit", id}, as_rl).status == 0);
  CHECK(sem_waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(sem_waiter.out() == "ran\n");
  CHECK(rlock_raw({"sem", "release", "--force", "s"}, as_rl).status == 0);
}

TEST_CASE("the documented minimal ACL serves a URL that names a database; without +select: 77") {
  // user rl2: the same rights but +select.
  const std::string without_select = "user rl2" + kMinimalAcl.substr(7) + " -select";
  RedisServer redis(RedisOptions{.config = {kMinimalAcl, without_select}});
  const std::string at = "@127.0.0.1:" + std::to_string(redis.port()) + "/1";
  auto r = rlock_raw({"--url", "redis://rl:rlpw" + at, "lock", "m", "--owner", "a"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  r = rlock_raw({"--url", "redis://rl2:rlpw" + at, "lock", "m", "--owner", "a"});
  CHECK(r.status == 77);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("NOPERM") != std::string::npos);
}

// The ACL LOG is where operators look for what a user tried and may not do: a standalone
// server's has no CLUSTER SHARDS asked on the chance that it is a cluster node.
TEST_CASE("the documented minimal ACL on a standalone server: inspect leaves no ACL LOG entry") {
  RedisServer redis(RedisOptions{.config = {kMinimalAcl}, .test_topology = false});
  const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
  REQUIRE(rlock_raw({"lock", "m", "--owner", "a"}, as_rl).status == 0);
  auto listed = rlock_raw({"inspect"}, as_rl);
  CHECK(listed.status == 0);
  CHECK(parse_json(listed.out).size() == 1);
  CHECK(redis.cmd({"ACL", "LOG"}) == std::vector<std::string>{});
}

TEST_CASE("an ACL user missing any one right changes nothing and exits 77 naming it") {
  for (const char* missing : {"spublish", "zadd", "set", "hset", "del", "pexpire"}) {
    CAPTURE(missing);
    RedisServer redis(RedisOptions{.config = {kMinimalAcl + " -" + missing}});
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    // A lock held by someone else, with a waiter queued: a forced unlock must not drop it.
    REQUIRE(rlock(redis, {"lock", "p", "--owner", "holder", "--lease", "60s"}).status == 0);
    auto before = redis.cmd({"HGETALL", lock_key("p")});
    auto fence = redis.cmd_str({"GET", fence_key("p")});
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"unlock", "--force", "p"},
                                               {"lock", "--wait", "1s", "p", "--owner", "w"},
                                               {"lock", "free", "--owner", "w"}}) {
      CAPTURE(args[0]);
      auto r = rlock_raw(args, as_rl);
      CHECK(r.status == 77);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("NOPERM") != std::string::npos);
    }
    CHECK(redis.cmd({"HGETALL", lock_key("p")}) == before);
    CHECK(redis.cmd_str({"GET", fence_key("p")}) == fence);
    CHECK(redis.cmd_int({"EXISTS", lock_key("p") + ":waiters"}) == 0);
    CHECK(redis.cmd_int({"EXISTS", lock_key("free")}) == 0);
    CHECK(redis.cmd_int({"EXISTS", fence_key("free")}) == 0);
  }
  for (const char* missing : {"spublish", "zadd", "hset", "hdel", "pexpire"}) {
    CAPTURE(missing);
    RedisServer redis(RedisOptions{.config = {kMinimalAcl + " -" + missing}});
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    auto r = rlock_raw({"sem", "acquire", "s", "--permits", "2"}, as_rl);
    CHECK(r.status == 77);
    CHECK(line_count(r.err) == 1);
    CHECK(redis.cmd({"KEYS", "*"}).empty());
  }
}

const std::vector<std::string> kDocumentedRights = documented_rights();

std::string documented_acl_without(const std::string& missing) {
  std::string acl = "on >rlpw resetkeys ~rlock:* resetchannels &rlock:* -@all";
  for (const auto& r : kDocumentedRights) {
    if (r != missing) acl += " +" + r;
  }
  return acl;
}

// One call of every primitive (what it exits with when every right is there), on the state
// that acl_state() leaves.
struct AclCall {
  std::vector<std::string> args;
  int status;
};
const std::vector<AclCall> kAclCalls = {
    {{"lock", "free", "--owner", "a"}, 0},
    {{"lock", "held", "--owner", "w", "-n"}, 75},
    {{"lock", "held", "--owner", "w", "--wait", "200ms"}, 75},
    {{"unlock", "held", "--owner", "h"}, 0},  // passes the lock on through a dead waiter
    {{"exec", "ex", "--", "true"}, 0},
    {{"exec", "--shared", "ex", "--", "true"}, 0},
    {{"exec", "--once-per", "1d", "op", "--", "true"}, 0},
    {{"lock", "--shared", "rs", "--owner", "r"}, 0},
    {{"unlock", "--force", "free"}, 0},
    {{"sem", "exec", "s", "--permits", "3", "--", "true"}, 0},
    {{"sem", "acquire", "s", "--permits", "3"}, 0},
    {{"sem", "status", "s"}, 0},
    {{"sem", "release", "--force", "s"}, 0},
    {{"latch", "count-down", "l", "--id", "a"}, 0},
    {{"latch", "status", "l"}, 0},
    {{"latch", "await", "l", "-n"}, 75},
    {{"latch", "set", "l2", "2"}, 0},
    {{"limit", "lim", "--rate", "5", "--per", "1s", "--peek"}, 0},
    {{"limit", "lim", "--rate", "5", "--per", "1s"}, 0},
    {{"limit", "lim", "--reset"}, 0},
    {{"delay-push", "q", "c", "--delay", "1h"}, 0},
    {{"delay-pop", "q"}, 0},
    {{"delay-pop", "q", "--", "true"}, 0},
    {{"delay-pop", "q", "--dead"}, 75},
    {{"inspect"}, 0},
};

// A lock held by another owner with a waiter that is gone (its release must pass the lock
// on: PUBSUB NUMSUB), a semaphore permit, a latch and two due items.
void acl_state(const RedisServer& redis) {
  redis.cmd({"FLUSHALL"});
  REQUIRE(rlock(redis, {"lock", "held", "--owner", "h", "--lease", "60s"}).status == 0);
  const std::string gone = "60000:lock:abcd:w";
  redis.cmd({"ZADD", lock_key("held") + ":waiters", "1", gone});
  redis.cmd({"ZADD", lock_key("held") + ":timeouts", "99999999999999", gone});
  REQUIRE(rlock(redis, {"sem", "acquire", "s", "--permits", "3"}).status == 0);
  REQUIRE(rlock(redis, {"latch", "set", "l", "3"}).status == 0);
  REQUIRE(rlock(redis, {"delay-push", "q", "a", "--delay", "0"}).status == 0);
  REQUIRE(rlock(redis, {"delay-push", "q", "b", "--delay", "0"}).status == 0);
}

// Every key with its type, value and whether it expires, in one round trip (snapshot()
// takes three per key): what "nothing changed" compares.
std::string state_digest(const RedisServer& redis) {
  return redis.cmd_str(
      {"EVAL",
       "local out = {} for _, k in ipairs(redis.call('KEYS', '*')) do "
       "out[#out + 1] = k .. (redis.call('PTTL', k) == -1 and 'p' or 'e') .. "
       "redis.call('DUMP', k) end table.sort(out) return redis.sha1hex(table.concat(out, '\\0'))",
       "0"});
}

// Lower case, `|` as a space: "pubsub|numsub" as rlock's line or the server's may name it.
std::string normalized(std::string s) {
  for (char& c : s) c = c == '|' ? ' ' : static_cast<char>(std::tolower(c));
  return s;
}

TEST_CASE("every primitive without any one documented right: 77 naming it, nothing changed") {
  RedisServer redis;
  const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
  REQUIRE(kDocumentedRights.size() >= 40);  // the ACL section was found and read
  std::vector<std::string> rights = {""};   // first with all of them
  rights.insert(rights.end(), kDocumentedRights.begin(), kDocumentedRights.end());
  for (const auto& missing : rights) {
    CAPTURE(missing);
    acl_state(redis);
    redis.cmd({"ACL", "DELUSER", "rl"});
    std::vector<std::string> setuser = {"ACL", "SETUSER", "rl"};
    std::istringstream words(documented_acl_without(missing));
    for (std::string w; words >> w;) setuser.push_back(w);
    redis.cmd(setuser);
    for (const auto& call : kAclCalls) {
      CAPTURE(json(call.args).dump());
      const std::string before = state_digest(redis);
      auto r = rlock_raw(call.args, as_rl);
      CAPTURE(r.err);
      if (missing.empty() || r.status != 77) {
        CHECK(r.status == call.status);
        CHECK(r.err.find("NOPERM") == std::string::npos);
        continue;
      }
      CHECK(line_count(r.err) == 1);
      CHECK(normalized(r.err).find(normalized(missing)) != std::string::npos);
      CHECK(state_digest(redis) == before);
    }
  }
}

// Numbers as 0: listings taken moments apart compare equal unless a value went missing.
std::string without_numbers(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      out += '0';
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

// A listing never leaves a value out without saying so: a right it reads with, taken away,
// either changes nothing it prints, or shows as an error field naming it, or (SCAN,
// DBSIZE, TIME) ends the listing with 77 naming it. Without +time, leases and tokens
// printed as null with exit 0.
TEST_CASE("inspect without any one documented right says what it could not read") {
  RedisServer redis;
  const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
  acl_state(redis);
  REQUIRE(rlock(redis, {"limit", "lim", "--rate", "5", "--per", "1h"}).status == 0);
  REQUIRE(rlock(redis, {"delay-push", "q", "later", "--delay", "1h"}).status == 0);
  auto set_acl = [&](const std::string& missing) {
    redis.cmd({"ACL", "DELUSER", "rl"});
    std::vector<std::string> setuser = {"ACL", "SETUSER", "rl"};
    std::istringstream words(documented_acl_without(missing));
    for (std::string w; words >> w;) setuser.push_back(w);
    redis.cmd(setuser);
  };
  set_acl("");
  auto full = rlock_raw({"inspect"}, as_rl);
  REQUIRE(full.status == 0);
  REQUIRE(parse_json(full.out).size() == 5);
  for (const auto& missing : kDocumentedRights) {
    CAPTURE(missing);
    set_acl(missing);
    auto r = rlock_raw({"inspect"}, as_rl);
    CAPTURE(r.out);
    CAPTURE(r.err);
    if (r.status == 77) {
      CHECK(line_count(r.err) == 1);
      CHECK(normalized(r.err).find(normalized(missing)) != std::string::npos);
      continue;
    }
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    if (without_numbers(r.out) == without_numbers(full.out)) continue;  // not a right it uses
    bool named = false;
    for (const auto& o : parse_json(r.out)) {
      named = named || (o.contains("error") &&
                        normalized(o.at("error").get<std::string>()).find(normalized(missing)) !=
                            std::string::npos);
    }
    CHECK(named);
  }
}

TEST_CASE(
    "a read-only replica is Redis unavailable for every primitive; limit --fail-open lets the call "
    "through") {
  RedisServer redis;
  redis.cmd({"REPLICAOF", "127.0.0.1", "1"});  // a replica of nothing: read-only, empty
  const std::vector<std::vector<std::string>> calls = {
      {"lock", "a"},
      {"exec", "a", "--", "true"},
      {"sem", "acquire", "s", "--permits", "1"},
      {"latch", "set", "l", "1"},
      {"limit", "x", "--rate", "1", "--per", "1s"},
      {"delay-push", "q", "p", "--delay", "0"},
  };
  for (const auto& args : calls) {
    CAPTURE(args.front());
    auto r = rlock(redis, args);
    CHECK(r.status == 69);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("READONLY") != std::string::npos);
    CHECK(r.err.find("point --url at the primary") != std::string::npos);
  }
  auto r = rlock(redis, {"limit", "x", "--rate", "1", "--per", "1s", "--fail-open"});
  CHECK(r.status == 0);
  CHECK(r.out.find("\"failed_open\":true") != std::string::npos);
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

// The claim of a grant checks only what it touches (the release that granted checked the
// rest): a key broken, or a right taken away, between the grant and the claim is caught there.
TEST_CASE("a granted waiter whose claim meets a broken key or a lost right changes nothing") {
  struct Breakage {
    const char* what;
    std::vector<std::vector<std::string>> commands;  // run between the grant and the claim
    int code;
    const char* says;
  };
  for (const Breakage& b :
       {Breakage{"fence", {{"SET", "rlock:lock:{c}:fence", "x"}}, 65, "malformed data"},
        Breakage{"exec",
                 {{"DEL", "rlock:lock:{c}:exec"}, {"HSET", "rlock:lock:{c}:exec", "f", "v"}},
                 65,
                 "hash"},
        Breakage{"right", {{"ACL", "SETUSER", "rl", "-zrem"}}, 77, "NOPERM rlock needs ZREM"}}) {
    std::string what = b.what;
    CAPTURE(what);
    RedisServer redis(RedisOptions{.config = {kMinimalAcl}});
    const Env as_rl{{"RLOCK_URL", "redis://rl:rlpw@127.0.0.1:" + std::to_string(redis.port())}};
    REQUIRE(rlock(redis, {"lock", "c", "--owner", "holder", "--lease", "60s"}).status == 0);
    Spawned waiter({rlock_binary(), "exec", "--wait", "30s", "c", "--", "echo", "ran"}, as_rl);
    REQUIRE(poll_until(
        [&] {
          return redis.cmd_int({"ZCARD", lock_key("c") + ":waiters"}) == 1;
        },
        10s));
    waiter.kill(SIGSTOP);
    REQUIRE(rlock(redis, {"unlock", "c", "--owner", "holder"}).status == 0);
    REQUIRE(redis.cmd_int({"EXISTS", lock_key("c") + ":grant"}) == 1);  // granted, unclaimed
    for (const auto& c : b.commands) redis.cmd(c);
    auto before = snapshot(redis);
    waiter.kill(SIGCONT);
    CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == b.code);
    CHECK(snapshot(redis) == before);
    CHECK(waiter.out().empty());
    CHECK(line_count(waiter.err()) == 1);
    CHECK(waiter.err().find(b.says) != std::string::npos);
  }
}

}  // namespace
}  // namespace rlock::test
