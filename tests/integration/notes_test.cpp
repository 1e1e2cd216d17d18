// --note, acquired_at and waiting_since: a hold's note and times as inspect shows them,
// their lifetime on the server, unlock --force printing them, and bad notes refused.
#include <doctest/doctest.h>

#include <cstdio>
#include <ctime>

#include "harness.hpp"
#include "inspect/scan_stream.hpp"
#include "inspect/types.hpp"
#include "lib_util.hpp"
#include "prim/key_layout.hpp"

namespace rlock::test {
namespace {

std::string notes_key(const std::string& name) { return lock_key(name) + ":notes"; }

// The server's clock (TIME) in Unix milliseconds.
long long server_ms(const RedisServer& redis) {
  auto t = redis.cmd({"TIME"});
  REQUIRE(t.size() == 2);
  return std::stoll(t[0]) * 1000 + std::stoll(t[1]) / 1000;
}

// An RFC 3339 UTC time with milliseconds ("2026-12-02T18:30:00.123Z") as Unix ms; FAILs on
// any other shape.
long long unix_ms_of(const json& text) {
  REQUIRE(text.is_string());
  const std::string s = text.get<std::string>();
  INFO("timestamp: " << s);
  REQUIRE(s.size() == 24);
  std::tm tm{};
  int ms = 0;
  char z = 0;
  REQUIRE(std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &tm.tm_year, &tm.tm_mon,
                      &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &z) == 8);
  REQUIRE(z == 'Z');
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<long long>(timegm(&tm)) * 1000 + ms;
}

// inspect's objects for `name`: one, or on a quorum one per member.
std::vector<json> inspected(const RedisServer& redis, const std::string& name) {
  auto r = rlock(redis, {"inspect", name});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  std::vector<json> out;
  for (const auto& e : parse_json(r.out)) {
    if (e["name"] == name) out.push_back(e);
  }
  REQUIRE(out.size() == redis.members().size());
  return out;
}

// Whether the notes key of `name` is gone from every member.
bool notes_gone(const RedisServer& redis, const std::string& name) {
  for (const auto* m : redis.members()) {
    if (m->cmd_int({"EXISTS", notes_key(name)}) != 0) return false;
  }
  return true;
}

const std::string kFrozen = "frozen for the release, ask #ops";
const std::string kHotfix = "hotfix 1.2.3 \xc3\xa9";  // UTF-8 is kept as it is

TEST_CASE(
    "notes: inspect shows each holder's note and acquired_at, each waiter's note and "
    "waiting_since, on the server's clock; the note passes with the grant") {
  RedisServer redis;
  const long long before = server_ms(redis);
  auto r = rlock(redis, {"lock", "N", "--owner", "a", "--lease", "60s", "--note", kFrozen});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const long long acquired = server_ms(redis);
  auto waiter =
      spawn_rlock(redis, {"lock", "--wait", "60s", "N", "--owner", "w", "--note", kHotfix});
  REQUIRE(poll_until([&] { return live_waiters(redis, "N") == 1; }, 10s));
  const long long queued = server_ms(redis);

  for (const auto& lock : inspected(redis, "N")) {
    INFO("inspect: " << lock);
    REQUIRE(lock["holders"].size() == 1);
    const auto& h = lock["holders"][0];
    CHECK(h["owner"] == "a");
    CHECK(h["note"] == kFrozen);
    const long long at = unix_ms_of(h["acquired_at"]);
    CHECK(at >= before - 1000);
    CHECK(at <= acquired + 1000);
    REQUIRE(lock["waiters"].size() == 1);
    const auto& w = lock["waiters"][0];
    CHECK(w["owner"] == "w");
    CHECK(w["note"] == kHotfix);
    const long long since = unix_ms_of(w["waiting_since"]);
    CHECK(since >= acquired - 1000);
    CHECK(since <= queued + 1000);
  }
  r = rlock(redis, {"--format", "table", "inspect", "N"});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("\"" + kFrozen + "\"") != std::string::npos);
  CHECK(r.out.find(" since 20") != std::string::npos);

  // The release grants the lock to the waiter: its note and a new acquired_at go with it.
  REQUIRE(rlock(redis, {"unlock", "N", "--owner", "a"}).status == 0);
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  for (const auto& lock : inspected(redis, "N")) {
    INFO("inspect: " << lock);
    REQUIRE(lock["holders"].size() == 1);
    CHECK(lock["holders"][0]["owner"] == "w");
    CHECK(lock["holders"][0]["note"] == kHotfix);
    CHECK(unix_ms_of(lock["holders"][0]["acquired_at"]) >= queued - 1000);
    CHECK(lock["waiters"] == json::array());
  }
  for (const auto* m : redis.members()) {
    auto notes = hash_of(*m, notes_key("N"));
    CHECK(keys_of(notes) == json::array({"at", "note", "owner"}));
    CHECK(notes["owner"] == "w");
  }
  REQUIRE(rlock(redis, {"unlock", "N", "--owner", "w"}).status == 0);
  CHECK(notes_gone(redis, "N"));
}

TEST_CASE(
    "notes: a hold without a note has acquired_at and a null note; a re-entry keeps "
    "the first note and time") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "R", "--owner", "a"}).status == 0);
  // Each member of a quorum keeps the time by its own clock: compared member by member.
  const std::vector<json> first = inspected(redis, "R");
  for (const auto& lock : first) {
    CHECK(lock["holders"][0]["note"] == nullptr);
    CHECK(unix_ms_of(lock["holders"][0]["acquired_at"]) > 0);
  }
  REQUIRE(rlock(redis, {"lock", "R", "--owner", "a", "--note", "second"}).status == 0);
  const std::vector<json> again = inspected(redis, "R");
  for (size_t i = 0; i < again.size(); ++i) {
    const auto& h = again[i]["holders"][0];
    CHECK(h["count"] == 2);
    CHECK(h["note"] == nullptr);
    CHECK(h["acquired_at"] == first[i]["holders"][0]["acquired_at"]);
  }
  REQUIRE(rlock(redis, {"unlock", "R", "--owner", "a"}).status == 0);
  REQUIRE(rlock(redis, {"unlock", "R", "--owner", "a"}).status == 0);
  CHECK(notes_gone(redis, "R"));
}

TEST_CASE("notes: a waiter's note leaves with its wait, a hold's with its lease") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "E", "--owner", "a", "--lease", "2s", "--note", "short"}).status ==
          0);
  auto r = rlock(redis, {"lock", "E", "--owner", "w", "--wait", "200ms", "--note", "gives up"});
  CHECK(r.status == 75);
  for (const auto* m : redis.members()) {
    CHECK(keys_of(hash_of(*m, notes_key("E"))) == json::array({"at", "note", "owner"}));
  }
  // Nothing to wait on but the lease running out on the server.
  CHECK(poll_until([&] { return notes_gone(redis, "E"); }, 10s));
  for (const auto* m : redis.members()) CHECK(m->cmd_int({"EXISTS", lock_key("E")}) == 0);

  // A hold kept by --min-hold keeps its record as long as it stays, and no longer than that.
  REQUIRE(rlock(redis,
                {"exec", "K", "--lease", "60s", "--min-hold", "1s", "--note", "kept", "--", "true"})
              .status == 0);
  for (const auto* m : redis.members()) {
    CHECK(hash_of(*m, notes_key("K"))["note"] == "kept");
    CHECK(m->cmd_int({"PTTL", notes_key("K")}) <= 1000);
  }
  CHECK(poll_until([&] { return notes_gone(redis, "K"); }, 10s));
}

TEST_CASE("notes: unlock --force prints the note of the reservation it removed") {
  RedisServer redis;
  REQUIRE(
      rlock(redis, {"lock", "F", "--owner", "ops", "--lease", "8h", "--note", kFrozen}).status ==
      0);
  auto r = rlock(redis, {"unlock", "F", "--force"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out) ==
        json::object({{"name", "F"},
                      {"forced", true},
                      {"holders", json::array({json::object(
                                      {{"owner", "ops"}, {"count", 1}, {"note", kFrozen}})})}}));
  CHECK(notes_gone(redis, "F"));
}

TEST_CASE("notes: exec --note is the job's hold's note while it runs") {
  RedisServer redis;
  auto r = rlock(redis, {"exec", "J", "--note", "nightly run", "--", rlock_binary(), "--url",
                         redis.topology_url(), "inspect", "J"});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  auto listed = parse_json(r.out);
  REQUIRE(listed.size() == redis.members().size());
  for (const auto& lock : listed) {
    REQUIRE(lock["holders"].size() == 1);
    CHECK(lock["holders"][0]["note"] == "nightly run");
  }
  CHECK(notes_gone(redis, "J"));
}

// One lock read as inspect shows it (on a quorum: a member's object a majority agrees
// on), as elect --observe reads it; nullopt when nobody holds it.
std::optional<json> read_lock(redis::Topology& topology, const prim::KeyLayout& layout,
                              const std::string& name) {
  std::optional<json> out;
  inspect::read_object(topology, layout, inspect::lock_type(), {name, layout.lock_key(name)},
                       [&](const std::vector<inspect::Shown>& batch) {
                         for (const auto& s : batch) {
                           if (!out && s.decoded.json.value("majority", true))
                             out = json::parse(s.decoded.json.dump());
                         }
                       });
  return out;
}

TEST_CASE("notes: inspect::read_object reads one lock as inspect shows it, note included") {
  RedisServer redis;
  redis::Topology topology = topology_for(redis);
  prim::KeyLayout layout;
  CHECK_FALSE(read_lock(topology, layout, "D").has_value());
  REQUIRE(rlock(redis, {"lock", "D", "--owner", "leader-1", "--note", "10.0.0.7:8080"}).status ==
          0);
  auto described = read_lock(topology, layout, "D");
  REQUIRE(described.has_value());
  INFO("described: " << described->dump());
  CHECK((*described)["name"] == "D");
  REQUIRE((*described)["holders"].size() == 1);
  CHECK((*described)["holders"][0]["owner"] == "leader-1");
  CHECK((*described)["holders"][0]["note"] == "10.0.0.7:8080");
  CHECK(unix_ms_of((*described)["holders"][0]["acquired_at"]) > 0);
  CHECK((*described)["fence"].get<long long>() > 0);
  REQUIRE(rlock(redis, {"unlock", "D", "--owner", "leader-1"}).status == 0);
  CHECK_FALSE(read_lock(topology, layout, "D").has_value());
}

// Whether the semaphore `name`'s notes key is gone from every member.
bool sem_notes_gone(const RedisServer& redis, const std::string& name) {
  for (const auto* m : redis.members()) {
    if (m->cmd_int({"EXISTS", "rlock:sem:{" + name + "}:notes"}) != 0) return false;
  }
  return true;
}

TEST_CASE(
    "notes: sem acquire --note: each permit keeps its note and acquired_at, a waiter "
    "its note and waiting_since; they go with the permit and the wait") {
  RedisServer redis;
  const long long before = server_ms(redis);
  auto r = rlock(redis, {"sem", "acquire", "S", "--permits", "1", "--owner", "a", "--lease", "60s",
                         "--note", kFrozen});
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const std::string id = parse_json(r.out).at("permits").at(0).get<std::string>();
  const long long acquired = server_ms(redis);
  auto waiter = spawn_rlock(redis, {"sem", "acquire", "S", "--permits", "1", "--owner", "w",
                                    "--wait", "60s", "--note", kHotfix});
  REQUIRE(poll_until(
      [&] {
        for (const auto* m : redis.members()) {
          if (m->cmd_int({"ZCARD", "rlock:sem:{S}:waiters"}) != 1) return false;
        }
        return true;
      },
      10s));
  const long long queued = server_ms(redis);
  for (const auto& sem : inspected(redis, "S")) {
    INFO("inspect: " << sem);
    REQUIRE(sem["permits"].size() == 1);
    CHECK(sem["permits"][0]["note"] == kFrozen);
    const long long at = unix_ms_of(sem["permits"][0]["acquired_at"]);
    CHECK(at >= before - 1000);
    CHECK(at <= acquired + 1000);
    REQUIRE(sem["waiters"].size() == 1);
    CHECK(sem["waiters"][0]["note"] == kHotfix);
    const long long since = unix_ms_of(sem["waiters"][0]["waiting_since"]);
    CHECK(since >= acquired - 1000);
    CHECK(since <= queued + 1000);
  }
  // The permit passes to the waiter with the waiter's own note.
  REQUIRE(rlock(redis, {"sem", "release", "S", "--permit", id}).status == 0);
  REQUIRE(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  const std::string next = parse_json(waiter.out()).at("permits").at(0).get<std::string>();
  for (const auto& sem : inspected(redis, "S")) {
    REQUIRE(sem["permits"].size() == 1);
    CHECK(sem["permits"][0]["note"] == kHotfix);
    CHECK(sem["waiters"] == json::array());
  }
  REQUIRE(rlock(redis, {"sem", "release", "S", "--permit", next}).status == 0);
  CHECK(sem_notes_gone(redis, "S"));

  // sem exec's permit, while its job runs; a bad note is refused as for a lock.
  r = rlock(redis, {"sem", "exec", "S", "--permits", "1", "--note", "batch", "--", rlock_binary(),
                    "--url", redis.topology_url(), "inspect", "S"});
  REQUIRE(r.status == 0);
  for (const auto& sem : parse_json(r.out)) CHECK(sem["permits"][0]["note"] == "batch");
  CHECK(sem_notes_gone(redis, "S"));
  r = rlock(redis, {"sem", "acquire", "S", "--permits", "1", "--note", "bad\x1b[2J"});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(sem_notes_gone(redis, "S"));
}

TEST_CASE("notes: an empty, over-long or non-text note is a usage error and writes nothing") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "other", "--owner", "a", "--note", "kept"}).status == 0);
  const auto before = snapshot(redis);
  const std::vector<std::string> bad = {
      "",        std::string(201, 'x'), "two\nlines",         "bell\x07",
      "del\x7f", "\xff\xfe not UTF-8",  "C1 \xc2\x85 control"};
  for (const auto& note : bad) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"lock", "B", "--owner", "a", "--note", note},
          std::vector<std::string>{"lock", "B", "--owner", "a", "--wait", "1s", "--note=" + note},
          std::vector<std::string>{"exec", "B", "--note", note, "--", "true"}}) {
      auto r = rlock(redis, args);
      INFO("note: " << json(note).dump(-1, ' ', false, json::error_handler_t::replace)
                    << " args[0]: " << args[0] << " stderr: " << r.err);
      CHECK(r.status == 64);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("--note") != std::string::npos);
      CHECK(r.out.empty());
    }
  }
  auto r = rlock(redis, {"lock", "B", "--owner", "a", "--shared", "--note", "reads"});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(snapshot(redis) == before);

  // 200 bytes (100 two-byte characters) are allowed.
  std::string longest;
  for (int i = 0; i < 100; ++i) longest += "\xc3\xa9";
  REQUIRE(rlock(redis, {"lock", "B", "--owner", "a", "--note", longest}).status == 0);
  CHECK(inspected(redis, "B").front()["holders"][0]["note"] == longest);
}

}  // namespace
}  // namespace rlock::test
