// `rlock inspect --format prometheus`: output that a strict reader of the text exposition
// format 0.0.4 accepts (names, label escapes, one block per family, HELP and TYPE first, no
// duplicate series), the values of every type, a family larger than its in-memory spool,
// and the usage errors.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "harness.hpp"

namespace rlock::test {
namespace {

// A series, name{label="value",...} with the labels in the order printed (unescaped), and
// its value.
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

bool metric_name(const std::string& s) {
  static const std::regex re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  return std::regex_match(s, re);
}

// The labels between the braces of `line` from `i` (after '{'); FAILs on what the format
// does not allow, such as an escape other than \\, \" and \n.
std::vector<std::pair<std::string, std::string>> parse_labels(const std::string& line, size_t& i) {
  static const std::regex label_name("[a-zA-Z_][a-zA-Z0-9_]*");
  std::vector<std::pair<std::string, std::string>> out;
  while (i < line.size() && line[i] != '}') {
    size_t eq = line.find("=\"", i);
    REQUIRE_MESSAGE(eq != std::string::npos, line);
    std::string name = line.substr(i, eq - i);
    CHECK_MESSAGE(std::regex_match(name, label_name), line);
    std::string value;
    for (i = eq + 2; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] != '\\') {
        value += line[i];
        continue;
      }
      REQUIRE_MESSAGE(i + 1 < line.size(), line);
      char e = line[++i];
      REQUIRE_MESSAGE((e == '\\' || e == '"' || e == 'n'), "bad escape in " << line);
      value += e == 'n' ? '\n' : e;
    }
    REQUIRE_MESSAGE(i < line.size(), "unterminated label value: " << line);
    out.emplace_back(name, value);
    ++i;
    if (i < line.size() && line[i] == ',') ++i;
  }
  REQUIRE_MESSAGE(i < line.size(), "no closing brace: " << line);
  ++i;
  return out;
}

double parse_value(const std::string& text, const std::string& line) {
  if (text == "+Inf") return HUGE_VAL;
  if (text == "-Inf") return -HUGE_VAL;
  if (text == "NaN") return NAN;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  CHECK_MESSAGE((used == text.size() && !text.empty()), "value not a float: " << line);
  return v;
}

// Reads an exposition strictly; FAILs on any line the format (as node_exporter's textfile
// collector reads it) refuses, on a family split in two blocks or whose HELP/TYPE follow its
// samples, and on a series given twice. Returns the samples keyed by their series text.
std::map<std::string, Sample> parse_exposition(const std::string& text) {
  std::map<std::string, Sample> out;
  std::set<std::string> finished;  // families whose block has ended
  std::string current;             // the family of the block being read
  std::set<std::string> helped, typed;
  REQUIRE((text.empty() || text.back() == '\n'));
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    start = end + 1;
    INFO("line: " << line);
    REQUIRE(!line.empty());
    std::string family;
    if (line[0] == '#') {
      std::smatch m;
      static const std::regex comment("# (HELP|TYPE) (\\S+) (.+)");
      REQUIRE(std::regex_match(line, m, comment));
      family = m[2];
      CHECK(metric_name(family));
      auto& seen = m[1] == "HELP" ? helped : typed;
      CHECK_MESSAGE(seen.insert(family).second, "second " << m[1] << " for " << family);
      if (m[1] == "TYPE") CHECK(m[3] == "gauge");
      CHECK_MESSAGE(!out.count(family + "#any"), "HELP/TYPE after samples");
    } else {
      size_t i = 0;
      while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
      Sample s;
      s.name = line.substr(0, i);
      CHECK(metric_name(s.name));
      if (i < line.size() && line[i] == '{') s.labels = parse_labels(line, ++i);
      REQUIRE(i < line.size());
      REQUIRE(line[i] == ' ');
      std::string rest = line.substr(i + 1);
      CHECK_MESSAGE(rest.find(' ') == std::string::npos, "a timestamp or junk: " << line);
      s.value = parse_value(rest, line);
      family = s.name;
      CHECK_MESSAGE(helped.count(family), "no HELP before the samples of " << family);
      CHECK_MESSAGE(typed.count(family), "no TYPE before the samples of " << family);
      std::string series = s.name + "{";
      for (const auto& [k, v] : s.labels) series += k + "=" + json(v).dump() + ",";
      series += "}";
      CHECK_MESSAGE(out.emplace(series, s).second, "duplicate series " << series);
      out.emplace(family + "#any", Sample{});
    }
    if (family != current) {
      CHECK_MESSAGE(!finished.count(family), "family " << family << " in two blocks");
      if (!current.empty()) finished.insert(current);
      current = family;
    }
  }
  for (auto it = out.begin(); it != out.end();) {
    it = it->first.size() > 4 && it->first.ends_with("#any") ? out.erase(it) : std::next(it);
  }
  return out;
}

double value_of(const std::map<std::string, Sample>& samples, const std::string& series) {
  auto it = samples.find(series);
  REQUIRE_MESSAGE(it != samples.end(), "missing " << series);
  return it->second.value;
}

TEST_CASE("inspect --format prometheus: every type, exact values, escaped names") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "deploy", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto first = spawn_rlock(redis, {"lock", "--wait", "60s", "deploy", "--owner", "w1"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("deploy") + ":waiters"}) == 1;
      },
      10s));
  ::usleep(300'000);
  auto second = spawn_rlock(redis, {"lock", "--wait", "60s", "deploy", "--owner", "w2"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("deploy") + ":waiters"}) == 2;
      },
      10s));
  for (const char* reader : {"r1", "r2"})
    REQUIRE(rlock(redis, {"lock", "-s", "reports", "--owner", reader, "--lease", "60s"}).status ==
            0);
  const std::string odd = "we\"ird\\name";
  REQUIRE(rlock(redis, {"lock", odd, "--owner", "o", "--lease", "60s"}).status == 0);
  REQUIRE(rlock(redis, {"sem", "acquire", "pool", "--permits", "3", "--count", "2", "--lease",
                        "60s", "--owner", "o"})
              .status == 0);
  REQUIRE(rlock(redis, {"latch", "set", "shards", "3"}).status == 0);
  REQUIRE(rlock(redis, {"latch", "count-down", "shards"}).status == 0);
  REQUIRE(rlock(redis, {"delay-push", "jobs", "now", "--delay", "0"}).status == 0);
  REQUIRE(rlock(redis, {"delay-push", "jobs", "later", "--delay", "1h"}).status == 0);
  REQUIRE(rlock(redis, {"limit", "api", "--rate", "10", "--per", "1h", "--burst", "5"}).status ==
          0);
  redis.cmd({"HSET", "rlock:latch:{not-a-latch}", "f", "v"});  // another program's hash

  auto r = rlock(redis, {"--format", "prometheus", "inspect"});
  INFO("stdout:\n" << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  auto s = parse_exposition(r.out);

  CHECK(value_of(s, R"(rlock_lock_held{name="deploy",mode="exclusive",})") == 1);
  CHECK(value_of(s, R"(rlock_lock_holders{name="deploy",})") == 1);
  CHECK(value_of(s, R"(rlock_lock_waiters{name="deploy",})") == 2);
  double lease = value_of(s, R"(rlock_lock_lease_remaining_seconds{name="deploy",})");
  CHECK(lease > 30);
  CHECK(lease <= 60);
  double age = value_of(s, R"(rlock_lock_oldest_waiter_age_seconds{name="deploy",})");
  CHECK(age >= 0.25);  // w1 queued at least 300 ms before the listing
  CHECK(age < 60);
  CHECK(value_of(s, R"(rlock_lock_held{name="reports",mode="shared",})") == 1);
  CHECK(value_of(s, R"(rlock_lock_holders{name="reports",})") == 2);
  CHECK(value_of(s, R"(rlock_lock_waiters{name="reports",})") == 0);
  CHECK(!s.count(R"(rlock_lock_oldest_waiter_age_seconds{name="reports",})"));
  CHECK(value_of(s, "rlock_lock_held{name=" + json(odd).dump() + R"(,mode="exclusive",})") == 1);
  CHECK(r.out.find(R"(rlock_lock_holders{name="we\"ird\\name"} 1)") != std::string::npos);
  CHECK(value_of(s, R"(rlock_semaphore_permits_in_use{name="pool",})") == 2);
  CHECK(value_of(s, R"(rlock_semaphore_capacity{name="pool",})") == 3);
  CHECK(value_of(s, R"(rlock_semaphore_waiters{name="pool",})") == 0);
  CHECK(value_of(s, R"(rlock_latch_count{name="shards",})") == 2);
  CHECK(value_of(s, R"(rlock_queue_items{name="jobs",state="delayed",})") == 1);
  CHECK(value_of(s, R"(rlock_queue_items{name="jobs",state="due",})") == 1);
  CHECK(value_of(s, R"(rlock_queue_items{name="jobs",state="leased",})") == 0);
  CHECK(value_of(s, R"(rlock_queue_items{name="jobs",state="dead",})") == 0);
  const double now_s = std::stod(redis.cmd({"TIME"}).at(0));
  double next_due = value_of(s, R"(rlock_queue_next_due_timestamp_seconds{name="jobs",})");
  CHECK(std::fabs(next_due - now_s) < 30);
  CHECK(value_of(s, R"(rlock_limiter_tokens{name="api",})") == 4);
  CHECK(value_of(s, R"(rlock_limiter_burst{name="api",})") == 5);
  CHECK(value_of(s, R"(rlock_object_unreadable{type="latch",name="not-a-latch",})") == 1);
  CHECK(!s.count(R"(rlock_latch_count{name="not-a-latch",})"));
  CHECK(s.size() == 25);  // 3 locks x 4 + 1 oldest waiter, 3 sem, 1 latch, 5 queue, 2 limiter, 1

  SUBCASE("--type and a pattern select as for JSON; nothing found prints nothing") {
    auto t = rlock(redis, {"inspect", "--format", "prometheus", "--type", "latch", "sh*"});
    REQUIRE(t.status == 0);
    auto only = parse_exposition(t.out);
    CHECK(only.size() == 1);
    CHECK(value_of(only, R"(rlock_latch_count{name="shards",})") == 2);
    auto none = rlock(redis, {"inspect", "--format", "prometheus", "nothing-*"});
    CHECK(none.status == 0);
    CHECK(none.out.empty());
  }
  SUBCASE("-q prints nothing") {
    auto q = rlock(redis, {"-q", "--format", "prometheus", "inspect"});
    CHECK(q.status == 0);
    CHECK(q.out.empty());
  }
}

TEST_CASE("inspect --format prometheus: a family beyond its in-memory spool stays one block") {
  RedisServer redis;
  // 3,000 latches and 3,000 locks, in one script: each family's samples outgrow the 64 KiB
  // kept in memory, and SCAN mixes the types.
  redis.cmd(
      {"EVAL",
       "for i = 1, 3000 do redis.call('SET', 'rlock:latch:{latch-with-a-longish-name-' .. i .. "
       "'}', i); redis.call('HSET', 'rlock:lock:{lock-with-a-longish-name-' .. i .. '}', "
       "'o', 1) end",
       "0"});
  TempDir tmp;
  auto r = rlock(redis, {"--format", "prometheus", "inspect"}, {{"TMPDIR", tmp.path().string()}});
  REQUIRE(r.status == 0);
  auto s = parse_exposition(r.out);
  CHECK(s.size() == 3000 + 3000 * 3);  // latch count; lock held, holders, waiters
  CHECK(value_of(s, R"(rlock_latch_count{name="latch-with-a-longish-name-2999",})") == 2999);
  CHECK(value_of(s, R"(rlock_lock_holders{name="lock-with-a-longish-name-17",})") == 1);
  CHECK(run({"find", tmp.path().string(), "-mindepth", "1"}).out.empty());  // nothing left behind

  // An unwritable TMPDIR: one line, exit 74, and no partial exposition.
  auto bad = rlock(redis, {"--format", "prometheus", "inspect"},
                   {{"TMPDIR", tmp.path().string() + "/missing"}});
  CHECK(bad.status == 74);
  CHECK(line_count(bad.err) == 1);
  CHECK(bad.err.find("temporary file") != std::string::npos);
  CHECK(bad.out.empty());
}

TEST_CASE("inspect --format prometheus: usage errors") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> cases = {
      {"--format", "prometheus", "lock", "x", "--owner", "o"},
      {"--format", "prometheus", "doctor"},
      {"sem", "status", "s", "--format", "prometheus"},
      {"--format", "Prometheus", "inspect"},
      {"--format", "prometheus", "inspect", "--type", "bogus"},
  };
  for (const auto& args : cases) {
    CAPTURE(json(args).dump());
    auto r = rlock(redis, args);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.out.empty());
  }
  auto r = rlock(redis, {"--format", "prometheus", "lock", "x", "--owner", "o"});
  CHECK(r.err == "rlock: --format prometheus is for inspect only, not lock; see rlock help lock\n");
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

}  // namespace
}  // namespace rlock::test
