// A seeded fuzz pass through the binary: argv shapes, durations, URLs, names, owners and
// config files, against a real redis-server. Whatever the input: no crash and no sanitizer
// report, an exit status from the documented set, and stderr made of whole printable lines
// starting "rlock: ", exactly one for an error.
//
// RLOCK_FUZZ_SEED and RLOCK_FUZZ_RUNS (default 4000) change the seed and the run count; a
// failure prints the seed and the argv, which reproduce it.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness.hpp"
#include "prim/key_layout.hpp"

namespace rlock::test {
namespace {

class Gen {
 public:
  explicit Gen(unsigned seed) : rng_(seed) {}

  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return static_cast<int>(below(100)) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

  std::string digits(size_t max_len) {
    std::string out;
    size_t n = 1 + below(max_len);
    for (size_t i = 0; i < n; ++i) out += static_cast<char>('0' + below(10));
    return out;
  }

  // Bytes a user or an attacker might type: printable ASCII, UTF-8, controls, escapes.
  std::string text(size_t max_len) {
    static const std::vector<std::string> pieces = {"a",
                                                    "Z",
                                                    "0",
                                                    "-",
                                                    "_",
                                                    ":",
                                                    "/",
                                                    "{",
                                                    "}",
                                                    "*",
                                                    "?",
                                                    "[",
                                                    "]",
                                                    "'",
                                                    "\"",
                                                    "\\",
                                                    " ",
                                                    "%",
                                                    "@",
                                                    "=",
                                                    ".",
                                                    "\xc3\xa9",
                                                    "\xe2\x9c\x93",
                                                    "\n",
                                                    "\r",
                                                    "\t",
                                                    "\x1b[2K",
                                                    "\x01",
                                                    "\x7f",
                                                    "\xe2\x80\xa8",
                                                    "--",
                                                    "-w",
                                                    "rlock: "};
    std::string out;
    size_t n = below(max_len + 1);
    for (size_t i = 0; i < n; ++i) out += pick(pieces);
    return out;
  }

  // Lock names: mostly valid, sometimes empty, huge or with control characters. Names
  // that are not UTF-8 are left out: their rule belongs to the names and bytes issue.
  std::string name(size_t index) {
    switch (below(6)) {
      case 0:
        return text(8);
      case 1:
        return std::string(below(2) ? 512 : 513, 'n');
      case 2:
        return "";
      default:
        return "fz-" + std::to_string(index);
    }
  }

  // Valid names and owners built of what CLI11 or a shell might read as a list or a quote:
  // brackets, braces, commas, quotes, a leading '-'.
  std::string list_like() {
    static const std::vector<std::string> pieces = {
        "[", "]", "{", "}", ",", "\"", "'", "a", "b", "-", " ", "=", "\xc3\xa9", "[]", "[a,b]"};
    std::string out;
    size_t n = 1 + below(8);
    for (size_t i = 0; i < n; ++i) out += pick(pieces);
    return out;
  }

  std::string duration(bool small) {
    static const std::vector<std::string> units = {"", "ms", "s", "m", "h", "d", "x", "S", " s"};
    static const std::vector<std::string> odd = {"",
                                                 "inf",
                                                 "infinity",
                                                 "-1s",
                                                 "+5s",
                                                 "1e3",
                                                 "nan",
                                                 "0x10",
                                                 "1h30",
                                                 "30m1h",
                                                 "1m1m",
                                                 "106753d",
                                                 "200000d",
                                                 "36500d",
                                                 "36501d",
                                                 "99999999999999999999d",
                                                 std::string(300, '9'),
                                                 ".",
                                                 "1..2s",
                                                 "1.5.h"};
    if (!small && chance(40)) return pick(odd);
    if (small) return std::to_string(below(300)) + "ms";
    std::string out;
    size_t parts = 1 + below(3);
    for (size_t i = 0; i < parts; ++i) {
      out += digits(chance(10) ? 25 : 3);
      if (chance(15)) out += "." + digits(3);
      out += pick(units);
    }
    return out;
  }

  // URLs around the real server's, carrying the secret, mutated. The host (H) and port (P)
  // are never mutated: a mutated address could reach a real host, or another suite's
  // server on this machine.
  std::string url(int port) {
    static const std::vector<std::string> forms = {
        "redis://:S3cret@H:P", "redis://user:S3cret@H:P/1",
        "redis:/:S3cret@H",    "redis://S3cret@H:P",
        "redis://H:P",         "rediss://:S3cret@H:D",
        "http://:S3cret@H",    "redis://:Gk5nRt8/Yp2W@H:P",
        "redis://:S3cret@H:0", "redis://:S3cret@H:99999",
        "redis://:S3cret@H:x", "redis://:S3cret@H:P/db"};
    static const std::vector<std::string> fixed = {"redis://user:S3cret",
                                                   "unix://:S3cret@/nonexistent.sock", ""};
    if (chance(10)) return pick(fixed);
    std::string out = pick(forms);
    static const std::string alphabet = ":/@[]?=%.abcS";
    size_t mutations = below(4);
    for (size_t i = 0; i < mutations && !out.empty(); ++i) {
      size_t at = below(out.size());
      if (out[at] == 'H' || out[at] == 'P' || out[at] == 'D' || out[at] == '@')
        continue;  // no '@': the password would be the host
      switch (below(3)) {
        case 0:
          out.erase(at, 1);
          break;
        case 1:
          out.insert(at, 1, alphabet[below(alphabet.size())]);
          break;
        default:
          out[at] = alphabet[below(alphabet.size())];
      }
    }
    // D: a port nothing listens on, for rediss (a TLS handshake with the plain server
    // would wait for --connect-timeout).
    static const int dead_port = free_port();
    std::string expanded;
    for (char c : out)
      expanded += c == 'H'   ? std::string("127.0.0.1")
                  : c == 'P' ? std::to_string(port)
                  : c == 'D' ? std::to_string(dead_port)
                             : std::string(1, c);
    return expanded;
  }

  std::string config(int port) {
    static const std::vector<std::string> keys = {
        "url", "password_file", "prefix", "owner", "connect_timeout", "timeout", "bogus", ""};
    switch (below(8)) {
      case 0:
        return text(20);
      case 1:
        return "{" + text(10);
      case 2:
        return "[1,2,3]";
      case 3:
        return std::string(below(2) ? 1000 : 70'000, '[');
      default: {
        json cfg = json::object();
        size_t n = below(4);
        for (size_t i = 0; i < n; ++i) {
          const std::string& key = pick(keys);
          if (key == "url") {
            cfg[key] = url(port);
          } else if (key.find("timeout") != std::string::npos) {
            cfg[key] = duration(false);
          } else if (chance(10)) {
            cfg[key] = static_cast<int>(below(100));
          } else {
            cfg[key] = text(6);
          }
        }
        return cfg.dump();
      }
    }
  }

 private:
  std::mt19937 rng_;
};

struct Vector {
  std::vector<std::string> args;
  Env env;
  bool verbose = false;
  std::set<int> allowed = {0, 64, 65, 69, 75};
};

Vector make_vector(Gen& g, size_t index, int port, const TempDir& dir) {
  Vector v;
  auto& a = v.args;
  // Global options, before the subcommand.
  if (g.chance(70))
    a.insert(a.end(),
             {"--url", g.chance(60) ? "redis://127.0.0.1:" + std::to_string(port) : g.url(port)});
  if (g.chance(10)) a.insert(a.end(), {"--timeout", g.duration(g.chance(50))});
  if (g.chance(10)) a.insert(a.end(), {"--connect-timeout", g.duration(g.chance(50))});
  if (g.chance(10)) a.insert(a.end(), {"--prefix", g.text(4)});
  if (g.chance(5))
    a.insert(a.end(), {"--format", g.pick<std::string>({"json", "table", "xml", ""})});
  if (g.chance(5)) a.push_back(g.pick<std::string>({"-q", "-v", "--quiet", "--verbose"}));
  if (g.chance(5))
    a.insert(a.end(), {"--password-file", g.pick<std::string>({"/dev/zero", "/nonexistent",
                                                               dir / "fifo", "/tmp", ""})});

  static const std::vector<std::string> subs = {"lock", "unlock", "exec", "inspect",
                                                "help", "exce",   "lokc", ""};
  const std::string sub = g.pick(subs);
  if (!sub.empty()) a.push_back(sub);
  std::vector<std::string> opts;
  if (sub == "lock" || sub == "exec") {
    if (g.chance(70))
      opts.insert(opts.end(), {"--owner", g.chance(70) ? "o" + std::to_string(index) : g.text(6)});
    if (g.chance(30)) opts.insert(opts.end(), {"--lease", g.duration(false)});
    if (g.chance(20))
      opts.insert(opts.end(),
                  {g.pick<std::string>({"-w", "--wait"}),
                   g.chance(50) ? g.duration(true) : g.pick<std::string>({"", "x", "-1", "0"})});
    if (g.chance(5)) opts.push_back("-n");
    if (g.chance(15)) {
      std::string code =
          g.chance(50) ? g.digits(3) : g.pick<std::string>({"010", "0x1", "-1", "", "abc", "256"});
      bool decimal = !code.empty() && code.size() <= 3 &&
                     code.find_first_not_of("0123456789") == std::string::npos;
      if (decimal && std::stoi(code) <= 255) v.allowed.insert(std::stoi(code));
      opts.insert(opts.end(), {"-E", code});
    }
    if (g.chance(5)) opts.push_back(g.pick<std::string>({"--wiat", "--bogus", "-x", "--lease=1s"}));
    if (sub == "exec" && g.chance(10)) {
      opts.insert(opts.end(),
                  {"--on-lost", g.pick<std::string>({"TERM", "KILL", "9", "0", "NOPE", ""})});
    }
    if (sub == "exec" && g.chance(10)) opts.insert(opts.end(), {"--kill-after", g.duration(false)});
    if (sub == "exec" && g.chance(10))
      opts.insert(opts.end(), {"--min-hold", g.duration(g.chance(50))});
    if (sub == "exec" && g.chance(5)) opts.push_back("--keep-secrets");
    opts.push_back(g.name(index));
  } else if (sub == "unlock") {
    opts.push_back(g.name(index));
    if (g.chance(70)) opts.insert(opts.end(), {"--owner", g.text(5)});
    if (g.chance(30)) opts.push_back("--force");
  } else if (sub == "inspect") {
    if (g.chance(50)) opts.push_back(g.text(5));
  } else if (sub == "help") {
    if (g.chance(70))
      opts.push_back(
          g.pick<std::string>({"lock", "unlock", "exec", "inspect", "help", "exce", ""}));
  } else if (g.chance(50)) {
    opts.push_back(g.text(4));
  }
  // Options in any order, a few stray words.
  for (size_t i = 0; i + 1 < opts.size(); ++i) {
    if (g.chance(20)) std::swap(opts[i], opts[i + 1]);
  }
  a.insert(a.end(), opts.begin(), opts.end());
  if (g.chance(5)) a.push_back(g.text(3));
  if (sub == "exec") {
    if (g.chance(90)) a.push_back("--");
    if (g.chance(90)) a.push_back("true");
  }
  if (g.chance(15)) {
    const std::string config = dir / ("config-" + std::to_string(index) + ".json");
    write_file(config, g.config(port));
    v.env.emplace_back(
        "RLOCK_CONFIG",
        g.chance(90) ? config : g.pick<std::string>({dir / "fifo", dir.path().string()}));
  }
  if (g.chance(10))
    v.env.emplace_back(g.pick<std::string>({"RLOCK_URL", "REDIS_URL"}), g.url(port));
  if (g.chance(5)) v.env.emplace_back("RLOCK_PASSWORD", g.text(4));
  for (const auto& arg : a) v.verbose = v.verbose || arg == "-v" || arg == "--verbose";
  return v;
}

std::string describe(const Vector& v) {
  std::string out;
  for (const auto& [k, val] : v.env)
    out += k + "=" + json(val).dump(-1, ' ', false, json::error_handler_t::replace) + " ";
  out += "rlock";
  for (const auto& a : v.args)
    out += " " + json(a).dump(-1, ' ', false, json::error_handler_t::replace);
  return out;
}

void check_stderr(const Vector& v, const RunResult& r) {
  const std::string usage = "Usage: rlock [OPTIONS] SUBCOMMAND [ARGS...]\n";
  std::string err = r.err;
  if (err.rfind(usage, 0) == 0) err = err.substr(err.find('\n', usage.size()) + 1);  // bare rlock
  for (unsigned char c : err) {
    if ((c < 0x20 && c != '\n') || c == 0x7f) FAIL("a control byte on stderr");
  }
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    if (end == std::string::npos) FAIL("stderr ends in a partial line");
    if (err.compare(start, 7, "rlock: ") != 0) FAIL("a stderr line without 'rlock: '");
    start = end + 1;
  }
  // A busy `lock` prints its result on stdout; every other failure is one stderr line.
  bool busy_result = r.status != 64 && r.status != 65 && r.status != 69 && !r.out.empty();
  if (r.status != 0 && !v.verbose && !busy_result) CHECK(line_count(err) == 1);
  if (busy_result && !v.verbose) CHECK(line_count(err) <= 1);
  if (r.status == 0 && !v.verbose) CHECK(line_count(err) <= 1);  // the made-up owner warning
}

TEST_CASE("fuzz: argv, durations, URLs, names and config files through the binary") {
  const char* seed_env = std::getenv("RLOCK_FUZZ_SEED");
  const char* runs_env = std::getenv("RLOCK_FUZZ_RUNS");
  const unsigned seed =
      seed_env ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10)) : 20261122u;
  const size_t runs = runs_env ? std::strtoul(runs_env, nullptr, 10) : 4000;
  MESSAGE("fuzz seed " << seed << ", " << runs << " runs");
  RedisServer redis;
  TempDir dir;
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  Gen g(seed);
  std::map<int, int> statuses;
  for (size_t i = 0; i < runs; ++i) {
    Vector v = make_vector(g, i, redis.port(), dir);
    INFO("seed " << seed << " run " << i << ": " << describe(v));
    auto r = rlock_raw(v.args, v.env, 20s);
    INFO("status " << r.status << "\nstderr: " << r.err);
    ++statuses[r.status];
    CHECK(v.allowed.count(r.status) == 1);
    CHECK(r.err.find("Sanitizer") == std::string::npos);
    CHECK(r.err.find("runtime error") == std::string::npos);
    CHECK(r.err.find("S3cret") == std::string::npos);
    CHECK(r.err.find("Gk5nRt8") == std::string::npos);
    check_stderr(v, r);
    if (i % 200 == 199) redis.cmd({"FLUSHALL"});
  }
  std::string summary;
  for (const auto& [status, count] : statuses)
    summary += " " + std::to_string(status) + ":" + std::to_string(count);
  MESSAGE("exit statuses (status:count):" << summary);
}

TEST_CASE("fuzz: names and owners with brackets, braces, commas and quotes are their bytes") {
  const char* seed_env = std::getenv("RLOCK_FUZZ_SEED");
  const unsigned seed =
      seed_env ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10)) : 20261201u;
  const size_t runs = 1000;
  MESSAGE("fuzz seed " << seed << ", " << runs << " runs");
  RedisServer redis;
  const prim::KeyLayout layout;
  Gen g(seed);
  for (size_t i = 0; i < runs; ++i) {
    std::vector<std::string> names = {g.list_like()};
    if (g.chance(30)) {
      std::string second = g.list_like();
      if (second != names[0]) names.push_back(second);
    }
    const std::string owner = g.list_like();
    bool dashed = false;
    for (const auto& n : names) dashed = dashed || n[0] == '-';
    // Options before or after the names; a name starting with '-' goes after `--`.
    std::vector<std::string> owner_args = owner[0] == '-' || g.chance(50)
                                              ? std::vector<std::string>{"--owner=" + owner}
                                              : std::vector<std::string>{"--owner", owner};
    auto command = [&](const std::string& sub) {
      std::vector<std::string> a = {sub};
      bool options_first = dashed || g.chance(50);
      if (options_first) a.insert(a.end(), owner_args.begin(), owner_args.end());
      if (dashed || (options_first && g.chance(20))) a.push_back("--");
      a.insert(a.end(), names.begin(), names.end());
      if (!options_first) a.insert(a.end(), owner_args.begin(), owner_args.end());
      return a;
    };
    auto lock = command("lock");
    INFO("seed " << seed << " run " << i << ": " << json(lock).dump());
    auto r = rlock(redis, lock);
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    json out = parse_json(r.out);
    std::set<std::string> taken;
    if (names.size() == 1) {
      CHECK(out.at("owner") == owner);
      taken.insert(out.at("name").get<std::string>());
    } else {
      for (const auto& l : out.at("locks")) taken.insert(l.at("name").get<std::string>());
    }
    CHECK(taken == std::set<std::string>(names.begin(), names.end()));
    for (const auto& n : names)
      CHECK(hash_of(redis, layout.lock_key(n)) == json::object({{owner, "1"}}));
    // Per name: the lock hash, its token, the request's record and the hold's record
    // (owner and acquired_at, KeyLayout::notes_key); nothing else.
    for (const auto& n : names) CHECK(redis.cmd_int({"EXISTS", layout.notes_key(n)}) == 1);
    CHECK(redis.cmd_int({"DBSIZE"}) == static_cast<long long>(4 * names.size()));
    auto unlock = command("unlock");
    auto u = rlock(redis, unlock);
    INFO(json(unlock).dump() << ": " << u.err);
    REQUIRE(u.status == 0);
    for (const auto& n : names) CHECK(redis.cmd_int({"EXISTS", layout.lock_key(n)}) == 0);
    redis.cmd({"FLUSHALL"});
  }
}

}  // namespace
}  // namespace rlock::test
