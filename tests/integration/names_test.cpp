// Names, owners and prefixes through the binary: bytes that are not UTF-8, braces, a
// leading '-', an empty prefix, and data other clients wrote.
#include <doctest/doctest.h>

#include <set>

#include "harness.hpp"
#include "prim/key_layout.hpp"

namespace rlock::test {
namespace {

TEST_CASE("names and owners that are not UTF-8 are refused before anything is written") {
  RedisServer redis;
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"lock", "\xff", "--owner", "o"},
                                             {"lock", "ok", "--owner", "o\xc3"},
                                             {"exec", "\xfe\xff", "--", "true"},
                                             {"unlock", "ok", "--owner", "\xed\xa0\x80"}}) {
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find("UTF-8") != std::string::npos);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

TEST_CASE(
    "inspect prints what other clients wrote, bytes that are not UTF-8 included, and exits 0") {
  RedisServer redis;
  redis.cmd({"HSET", lock_key("foreign"), "own\xff\xfe", "1"});
  redis.cmd({"HSET", lock_key("bad\xff"), "o", "1"});
  auto r = rlock(redis, {"inspect"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto listed = parse_json(r.out);
  REQUIRE(listed.size() == 2);
  CHECK(listed[1].at("holders").at(0).at("owner") == "own\xef\xbf\xbd\xef\xbf\xbd");  // U+FFFD each
  auto t = rlock(redis, {"inspect", "--format", "table"});
  CHECK(t.status == 0);
  CHECK(t.out.find("own\\xff\\xfe (x1)") != std::string::npos);
  CHECK(line_count(t.out) == 3);
}

TEST_CASE("names with braces and '%' keep one hash tag and round-trip through inspect") {
  RedisServer redis;
  const std::vector<std::string> names = {"}x", "}{", "{a}", "50%", "%7D"};
  for (const auto& name : names) REQUIRE(rlock(redis, {"lock", name, "--owner", "o"}).status == 0);
  auto listed = parse_json(rlock(redis, {"inspect"}).out);
  std::set<std::string> seen;
  for (const auto& entry : listed) {
    const std::string key = entry.at("key");
    // One tag: the first '{' and the next '}' enclose the whole encoded name.
    CHECK(key.find('}') == key.size() - 1);
    seen.insert(entry.at("name").get<std::string>());
  }
  CHECK(seen == std::set<std::string>(names.begin(), names.end()));
  for (const auto& name : names) CHECK(rlock(redis, {"unlock", name, "--owner", "o"}).status == 0);
  CHECK(parse_json(rlock(redis, {"inspect"}).out).empty());
  CHECK(redis.cmd({"KEYS", "rlock:lock:*:fence"}).size() ==
        names.size());  // no two names share a key
}

TEST_CASE("a name that starts with '-' is usable after --; an empty --prefix is honoured") {
  RedisServer redis;
  CHECK(rlock(redis, {"lock", "--owner", "o", "--", "-dash"}).status == 0);
  CHECK(hash_of(redis, lock_key("-dash")) == json::object({{"o", "1"}}));
  CHECK(rlock(redis, {"unlock", "--owner", "o", "--", "-dash"}).status == 0);
  auto r = rlock(redis, {"exec", "-n", "--", "-dash", "--", "echo", "ran", "--", "x"});
  CHECK(r.status == 0);
  CHECK(r.out == "ran -- x\n");

  CHECK(rlock(redis, {"--prefix", "", "lock", "p", "--owner", "o"}).status == 0);
  CHECK(hash_of(redis, "lock:{p}") == json::object({{"o", "1"}}));
  auto braces = rlock(redis, {"--prefix", "{}", "lock", "p", "--owner", "o"});
  CHECK(braces.status == 64);
  CHECK(line_count(braces.err) == 1);
}

// CLI11 reads "[a,b]" given to a list (lock names, --permit) as the list a, b and "[x]" as
// x: another lock. Every word that is a name, an owner, an id or a payload is its bytes.
const std::vector<std::string> kListLike = {"[x]", "[a,b]", "[a-z]", "[]",
                                            "{x}", "\"x\"", "a,b",   "-x"};

// lock_key, braces and '%' encoded as the layout does.
std::string key_of(const std::string& name) { return prim::KeyLayout().lock_key(name); }

// args, then the names, after a `--` of their own when one starts with '-' (a NAME's rule).
std::vector<std::string> naming(std::vector<std::string> args,
                                const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n[0] == '-') {
      args.push_back("--");
      break;
    }
  }
  args.insert(args.end(), names.begin(), names.end());
  return args;
}

TEST_CASE("a name, owner, id or payload that looks like a list is the bytes given") {
  RedisServer redis;
  for (const char* other : {"x", "a", "b", "a-z", "n"})
    REQUIRE(rlock(redis, {"lock", other, "--owner", "alice", "--lease", "10m"}).status == 0);
  for (const auto& w : kListLike) {
    CAPTURE(w);
    auto r = rlock(redis, naming({"lock", "--owner=" + w}, {w}));
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    CHECK(parse_json(r.out).at("name") == w);
    CHECK(hash_of(redis, key_of(w)) == json::object({{w, "1"}}));
    r = rlock(redis, naming({"lock", "--owner", "bob"}, {w}));
    CHECK(r.status == 75);
    CHECK(parse_json(r.out).at("name") == w);
    r = rlock(redis, naming({"unlock", "--force"}, {w}));
    CHECK(r.status == 0);
    CHECK(parse_json(r.out) ==
          json::parse(R"({"forced":true,"holders":[{"count":1,"owner":)" + json(w).dump() +
                      R"(}],"name":)" + json(w).dump() + "}"));
    CHECK(redis.cmd_int({"EXISTS", key_of(w)}) == 0);

    std::vector<std::string> job = {"--", "sh", "-c", R"(printf %s "$RLOCK_NAME|$RLOCK_OWNER")"};
    std::vector<std::string> exec = naming({"exec", "--owner=" + w}, {w});
    if (w[0] == '-') exec.push_back("--");  // `exec -- -NAME -- CMD`
    exec.insert(exec.end(), job.begin() + (w[0] == '-' ? 1 : 0), job.end());
    r = rlock(redis, exec);
    CHECK(r.status == 0);
    CHECK(r.out == w + "|" + w);

    // Beside a lock whose name CLI11 would have read into it: only the ones given.
    const std::string bracketed = "[n]";
    r = rlock(redis, naming({"lock", "--owner", "o"}, {w, bracketed}));
    CHECK(r.status == 0);
    std::set<std::string> taken;
    const json both = parse_json(r.out);
    for (const auto& l : both.at("locks")) taken.insert(l.at("name").get<std::string>());
    CHECK(taken == std::set<std::string>{w, bracketed});
    CHECK(rlock(redis, naming({"unlock", "--owner", "o"}, {w, bracketed})).status == 0);
    CHECK(redis.cmd_int({"EXISTS", key_of(w)}) == 0);

    r = rlock(redis, naming({"sem", "acquire", "--permits", "2", "--owner=" + w}, {w}));
    CHECK(r.status == 0);
    CHECK(parse_json(r.out).at("name") == w);
    CHECK(parse_json(r.out).at("owner") == w);
    CHECK(redis.cmd_int({"EXISTS", prim::KeyLayout().sem_key(w)}) == 1);
    r = rlock(redis, naming({"latch", "set"}, {w, "2"}));
    CHECK(r.status == 0);
    CHECK(parse_json(r.out).at("name") == w);
    r = rlock(redis, naming({"latch", "count-down", "--id=" + w}, {w}));
    CHECK(r.status == 0);
    CHECK(parse_json(r.out).at("id") == w);
    // limit and delay-pop take `-- -NAME` only with a command after it: not this test's.
    if (w[0] == '-') continue;
    r = rlock(redis, naming({"limit", "--rate", "5", "--per", "1m", "--client=" + w}, {w}));
    CHECK(r.status == 0);
    CHECK(parse_json(r.out).at("name") == w);
    r = rlock(redis, naming({"delay-push", "--delay", "0", "--id=" + w}, {w, w}));
    CHECK(r.status == 0);
    r = rlock(redis, naming({"delay-pop"}, {w}));
    CHECK(r.status == 0);
    json item = parse_json(r.out);
    CHECK(item.at("queue") == w);
    CHECK(item.at("id") == w);
    CHECK(item.at("payload") == w);
  }
  // The locks a list would have named were never touched.
  for (const char* other : {"x", "a", "b", "a-z", "n"})
    CHECK(hash_of(redis, lock_key(other)) == json::object({{"alice", "1"}}));
}

TEST_CASE("a permit id that looks like a list is the bytes given") {
  RedisServer redis;
  auto r = rlock(redis, {"sem", "acquire", "--permits", "2", "S", "--owner", "o"});
  REQUIRE(r.status == 0);
  const std::string id = parse_json(r.out).at("permits").at(0);
  r = rlock(redis, {"sem", "release", "S", "--permit", "[" + id + "]"});
  CHECK(r.status == 75);
  CHECK(r.err.find("permit [" + id + "] is not held") != std::string::npos);
  CHECK(parse_json(rlock(redis, {"sem", "status", "S"}).out).at("in_use") == 1);
  r = rlock(redis, {"sem", "release", "S", "--permit=[" + id + "]"});
  CHECK(r.status == 75);
  CHECK(rlock(redis, {"sem", "release", "S", "--permit", id}).status == 0);
}

TEST_CASE("a wait that runs out says how long it waited") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "w", "--owner", "a"}).status == 0);
  auto l = rlock(redis, {"lock", "w", "--owner", "b", "--wait", "300ms"});
  CHECK(l.status == 75);
  CHECK(l.err.find("gave up after waiting 300ms") != std::string::npos);
  CHECK(line_count(l.err) == 1);
  auto e = rlock(redis, {"exec", "-w", "300ms", "w", "--", "true"});
  CHECK(e.status == 75);
  CHECK(e.err.find("gave up after waiting 300ms") != std::string::npos);
  CHECK(line_count(e.err) == 1);
}

TEST_CASE("inspect says which locks an ACL user may not read, instead of failing") {
  RedisServer redis(RedisOptions{
      .config = {"user peek on >pw resetkeys ~rlock:lock:{mine}* ~rlock:lock-readers:{mine} -@all "
                 "+scan +dbsize +hgetall +hscan +hlen +pttl +get +zcard +zrange +time"}});
  REQUIRE(rlock(redis, {"lock", "mine", "--owner", "o"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "other", "--owner", "o"}).status == 0);
  auto r =
      rlock_raw({"--url", "redis://peek:pw@127.0.0.1:" + std::to_string(redis.port()), "inspect"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto listed = parse_json(r.out);
  REQUIRE(listed.size() == 2);
  CHECK_FALSE(listed[0].contains("error"));
  CHECK(listed[1].at("error").get<std::string>().find("not readable with this ACL user") !=
        std::string::npos);
}

}  // namespace
}  // namespace rlock::test
