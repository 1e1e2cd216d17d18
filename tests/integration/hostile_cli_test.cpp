// Hostile input through the binary: secrets in malformed URLs and in a job's environment,
// files that would block or are too large, durations at the edges of the clock, owner ids
// that try to forge stderr lines, and a command line that guides a user who mistypes.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "harness.hpp"

namespace rlock::test {
namespace {

std::string with_port(const std::string& scheme_and_auth, int port, const std::string& tail = "") {
  return scheme_and_auth + "127.0.0.1:" + std::to_string(port) + tail;
}

// Every byte of `text` is printable, but for the line ends.
bool printable_lines(const std::string& text) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
  }
  return true;
}

TEST_CASE("hostile: no stderr repeats a malformed URL's password, whatever its source") {
  RedisServer redis(RedisOptions{.requirepass = "right"});
  TempDir dir;
  const std::string port = std::to_string(redis.port());
  struct Case {
    std::string url;
    int status;
  };
  const Case cases[] = {
      {"redis://user:S3cret", 64},
      {"redis:/:S3cret@127.0.0.1", 64},
      {"redis//:S3cret@127.0.0.1", 64},
      {"S3cret", 64},
      {"http://u:S3cret@127.0.0.1", 64},
      {"redis://:S3cret@127.0.0.1:0", 64},
      {"redis://:S3cret@127.0.0.1:99999", 64},
      {"redis://:S3cret@127.0.0.1:port", 64},
      {"redis://:Gk5nRt8/Yp2W@127.0.0.1:x6379", 64},
      {"redis://:S3cret@127.0.0.1/db", 64},
      {"redis://:S3cret@127.0.0.1/-1", 64},
      {"redis://:S3cret@[::1", 64},
      {"redis://:S3cret@", 64},
      {"redis://S3cret:1:2", 64},
      {"unix://:S3cret@relative.sock", 64},
      {"unix://:S3cret@/tmp/s.sock?db=x", 64},
      {"rediss://:S3cret@127.0.0.1", 69},
      {"redis://:S3cret@127.0.0.1:" + std::to_string(free_port()), 69},  // refused
      {"redis://:S3cret@127.0.0.1:" + port, 69},                         // wrong password
      {"redis://alice:S3cret@127.0.0.1:" + port, 69},                    // unknown user
  };
  const std::string config = dir / "config.json";
  for (const auto& c : cases) {
    write_file(config, json::object({{"url", c.url}}).dump());
    const std::pair<const char*, std::pair<std::vector<std::string>, Env>> sources[] = {
        {"--url", {{"--url", c.url, "lock", "L", "--owner", "o"}, {}}},
        {"RLOCK_URL", {{"lock", "L", "--owner", "o"}, {{"RLOCK_URL", c.url}}}},
        {"REDIS_URL", {{"inspect"}, {{"REDIS_URL", c.url}}}},
        {"config file", {{"exec", "L", "--", "true"}, {{"RLOCK_CONFIG", config}}}},
    };
    for (const auto& [source, run_with] : sources) {
      INFO("url: " << c.url << " from " << source);
      auto r = rlock_raw(run_with.first, run_with.second);
      INFO("stderr: " << r.err);
      CHECK(r.status == c.status);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("S3cret") == std::string::npos);
      CHECK(r.err.find("Gk5nRt8") == std::string::npos);
      CHECK(r.err.find("Yp2W") == std::string::npos);
    }
  }
}

TEST_CASE("hostile: redis://USER@host is the ACL user, with the password from elsewhere") {
  RedisServer redis(
      RedisOptions{.requirepass = "defaultpw", .config = {"user alice on >alicepw ~* &* +@all"}});
  TempDir dir;
  const std::string url = with_port("redis://alice@", redis.port());
  auto r = rlock_raw({"--url", url, "lock", "a1", "--owner", "o"}, {{"RLOCK_PASSWORD", "alicepw"}});
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("a1")) == json::object({{"o", "1"}}));

  const std::string pw_file = dir / "pw";
  write_file(pw_file, "alicepw\n", 0600);
  r = rlock_raw({"--url", url, "--password-file", pw_file, "lock", "a2", "--owner", "o"});
  CHECK(r.status == 0);

  r = rlock_raw({"--url", url, "lock", "a3", "--owner", "o"}, {{"RLOCK_PASSWORD", "defaultpw"}});
  CHECK(r.status == 69);  // alice with the default user's password: refused, not the default user

  r = rlock_raw({"--url", url, "lock", "a4", "--owner", "o"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("ACL user but no password") != std::string::npos);
  CHECK(r.err.find("alice") == std::string::npos);  // a redis-cli user may have meant a password
}

TEST_CASE("hostile: exec's job inherits no Redis password unless --keep-secrets") {
  RedisServer redis(RedisOptions{.requirepass = "S3cretpw"});
  TempDir dir;
  const std::string secret_url = with_port("redis://:S3cretpw@", redis.port());
  const Env envs[] = {
      {{"RLOCK_PASSWORD", "S3cretpw"}, {"RLOCK_URL", redis.url()}},
      {{"RLOCK_URL", secret_url}},
      {{"REDIS_URL", secret_url}},
  };
  for (const auto& env : envs) {
    INFO("env: " << env.front().first);
    auto r = rlock_raw({"exec", "job", "--", "env"}, env);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("RLOCK_FENCE=") != std::string::npos);
    CHECK(r.out.find("S3cretpw") == std::string::npos);

    r = rlock_raw({"exec", "--keep-secrets", "job", "--", "env"}, env);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("S3cretpw") != std::string::npos);
  }
  // A URL without a password is no secret: the job still learns where Redis is.
  auto r = rlock_raw({"exec", "job", "--", "env"},
                     {{"RLOCK_URL", redis.url()}, {"RLOCK_PASSWORD", "S3cretpw"}});
  CHECK(r.out.find("RLOCK_URL=" + redis.url()) != std::string::npos);

  // The documented way for a job that runs rlock itself: a password file.
  const std::string pw_file = dir / "pw";
  write_file(pw_file, "S3cretpw\n", 0600);
  r = rlock_raw({"exec", "outer", "--", rlock_binary(), "--password-file", pw_file, "lock", "inner",
                 "--owner", "o"},
                {{"RLOCK_URL", redis.url()}, {"RLOCK_PASSWORD", "S3cretpw"}});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("inner")) == json::object({{"o", "1"}}));
}

TEST_CASE("hostile: FIFOs, directories, devices and huge files are refused at once (64)") {
  RedisServer redis;
  TempDir dir;
  const std::string fifo = dir / "fifo", big = dir / "big.json", big_pw = dir / "big.pw";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  write_file(big, "{\"prefix\": \"" + std::string(100 * 1024, 'x') + "\"}");
  write_file(big_pw, std::string(5000, 'p'), 0600);
  struct Case {
    const char* what;
    std::vector<std::string> args;
    Env env;
    const char* message;
  };
  const Case cases[] = {
      {"FIFO password file",
       {"--password-file", fifo, "inspect"},
       {},
       "is a FIFO, not a regular file"},
      {"FIFO config", {"inspect"}, {{"RLOCK_CONFIG", fifo}}, "is a FIFO, not a regular file"},
      {"directory config", {"inspect"}, {{"RLOCK_CONFIG", dir.path().string()}}, "is a directory"},
      {"device password file", {"--password-file", "/dev/zero", "inspect"}, {}, "is a device"},
      {"100 KiB config", {"inspect"}, {{"RLOCK_CONFIG", big}}, "larger than 64 KiB"},
      {"5000-byte password file", {"--password-file", big_pw, "inspect"}, {}, "larger than 4 KiB"},
  };
  for (const auto& c : cases) {
    INFO("case: " << c.what);
    auto r = rlock(redis, c.args, c.env, 10s);
    INFO("stderr: " << r.err);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.elapsed < 5s);
  }
}

TEST_CASE("hostile: --wait inf waits, compound durations, bounds and decimal -E") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "L", "--owner", "a"}).status == 0);
  auto waiter = spawn_rlock(redis, {"lock", "L", "--owner", "b", "-w", "inf"});
  CHECK_FALSE(waiter.wait(deadline(1500ms)).has_value());  // still waiting
  REQUIRE(rlock(redis, {"unlock", "L", "--owner", "a"}).status == 0);
  CHECK(waiter.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(parse_json(waiter.out())["owner"] == "b");

  auto r = rlock(redis, {"lock", "C", "--owner", "a", "--lease", "1h30m"});
  CHECK(r.status == 0);
  CHECK(parse_json(r.out)["lease_ms"] == 5'400'000);
  CHECK(redis.cmd_int({"PTTL", lock_key("C")}) > 5'300'000);

  r = rlock(redis, {"lock", "L", "--owner", "c", "-E", "010"});
  CHECK(r.status == 10);  // decimal, not octal 8

  for (const auto& args : std::vector<std::vector<std::string>>{
           {"lock", "X", "--owner", "a", "--lease", "106753d"},
           {"lock", "X", "--owner", "a", "--wait", "200000d"},
           {"lock", "X", "--owner", "a", "--wait", ""},
           {"exec", "--timeout", "", "X", "--", "true"},
           {"lock", "X", "--owner", "a", "-E", "0x1"},
       }) {
    r = rlock(redis, args);
    INFO("stderr: " << r.err);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  CHECK(redis.cmd_int({"EXISTS", lock_key("X")}) == 0);
}

TEST_CASE("hostile: delay-pop's whole-number flags are decimal and never clamped") {
  RedisServer redis;
  for (int i = 0; i < 9; ++i)
    REQUIRE(rlock(redis, {"delay-push", "q", "p", "--delay", "0"}).status == 0);
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {{"delay-pop", "q", "--count", "0x2"}, "--count must be a whole number from 1 to 1000"},
      {{"delay-pop", "q", "--count", "99999999999999999999"}, "not '99999999999999999999'"},
      {{"delay-pop", "q", "--count", "-1"}, "--count must be a whole number from 1 to 1000"},
      {{"delay-pop", "q", "--count", "1001"}, "not '1001'"},
      {{"delay-pop", "q", "--max-deliveries", "1e3", "--", "true"},
       "--max-deliveries must be a whole number from 1 to 1000000000, not '1e3'"},
      {{"delay-pop", "q", "--max-deliveries", "18446744073709551617", "--", "true"},
       "--max-deliveries must be a whole number"},
      {{"delay-pop", "q", "--max-deliveries", "0", "--", "true"}, "not '0'"},
      {{"delay-pop", "q", "-E", "0x4B"}, "-E/--conflict-exit-code must be a whole number"},
      {{"delay-pop", "q", "-E", "256"}, "from 0 to 255, not '256'"},
      {{"limit", "l", "--rate", "+5", "--per", "1s"}, "--rate must be a whole number"},
  };
  for (const auto& c : cases) {
    auto r = rlock(redis, c.args);
    INFO("args: " << c.args[2] << " " << c.args[3] << "; stderr: " << r.err);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
  CHECK(redis.cmd_int({"HLEN", "rlock:queue:{q}:items"}) == 9);  // nothing taken
  // 010 is ten, not octal 8: all nine items come out (and -E 010 exits 10).
  auto r = rlock(redis, {"delay-pop", "q", "--count", "010", "-E", "010"});
  CHECK(r.status == 0);
  CHECK(line_count(r.out) == 9);
  r = rlock(redis, {"delay-pop", "q", "--count", "010", "-E", "010"});
  CHECK(r.status == 10);
}

TEST_CASE("hostile: owner ids and names with escapes stay on one line of stderr") {
  RedisServer redis;
  const std::string evil = "x\nrlock: lock released\x1b[2K\r";
  // rlock refuses such an owner itself (one escaped line, nothing written)...
  auto refused = rlock(redis, {"lock", "L", "--owner", evil});
  CHECK(refused.status == 64);
  CHECK(line_count(refused.err) == 1);
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);
  // ...but another client can still write one: printing it must not forge lines.
  redis.cmd({"HSET", lock_key("L"), evil, "1"});
  redis.cmd({"PEXPIRE", lock_key("L"), "60000"});
  const std::vector<std::string> runs[] = {
      {"exec", "L", "--", "true"},
      {"unlock", "L", "--owner", "z"},
      {"-v", "lock", "L", "--owner", "z", "--wait", "300ms"},
      {"exec", "-w", "300ms", "L", "--", "true"},
  };
  for (const auto& args : runs) {
    auto r = rlock(redis, args);
    INFO("stderr: " << r.err);
    CHECK(r.status == 75);
    CHECK(printable_lines(r.err));
    CHECK(r.err.find("x\\nrlock: lock released\\x1b[2K\\r") != std::string::npos);
    if (args[0] != "-v") CHECK(line_count(r.err) == 1);
  }
}

TEST_CASE("hostile: the command line guides") {
  RedisServer redis;
  auto r = rlock(redis, {"help"});
  CHECK(r.status == 0);
  CHECK(r.out.find("Usage: rlock [OPTIONS] [SUBCOMMAND]") != std::string::npos);
  CHECK(r.out.find("Subcommands:") != std::string::npos);
  CHECK(r.out.find("rlock rlock") == std::string::npos);
  CHECK(r.out.find("delay-push") != std::string::npos);  // delayed queues are built now
  CHECK(r.out.find("delay-pop") != std::string::npos);

  r = rlock(redis, {"help", "exec"});
  CHECK(r.status == 0);
  CHECK(r.out.find("Usage: rlock exec [OPTIONS]") != std::string::npos);
  CHECK(r.out.find("--keep-secrets") != std::string::npos);

  r = rlock_raw({});
  CHECK(r.status == 64);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "rlock: missing subcommand (lock, unlock, exec, elect, sem, inspect, latch, limit, "
        "delay-push, "
        "delay-pop, doctor or help); see rlock help\n");

  r = rlock(redis, {"exce", "L", "--", "true"});
  CHECK(r.status == 64);
  CHECK(r.err == "rlock: unknown subcommand 'exce' (did you mean 'exec'?); see rlock help\n");
  r = rlock(redis, {"lock", "L", "--wiat", "5s"});
  CHECK(r.status == 64);
  CHECK(r.err == "rlock: unknown option '--wiat' (did you mean '--wait'?); see rlock help lock\n");
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

// rlock(1), DIAGNOSTICS: everything rlock prints on stderr is one line starting `rlock: `; a usage
// error exits 64 and touches nothing.
TEST_CASE("hostile: every usage error is one line on stderr and exit 64") {
  RedisServer redis;
  const std::vector<std::vector<std::string>> usage_errors = {
      {},
      {"-qv"},
      {"-q"},
      {"-v", "--timeout", "2s"},
      {"--format", "table"},
      {"exce", "L", "--", "true"},
      {"--bogus"},
      {"lock"},
      {"lock", "L", "--wiat", "5s"},
      {"lock", "L", "--wait", "soon"},
      {"lock", "L", "--wait"},
      {"lock", "L", "L"},  // several names, each once
      {"sem", "status", "s", "extra"},
      {"unlock", "L"},
      {"exec", "L"},
      {"exec", "L", "--"},
      {"exec", "L", "true"},
      {"sem"},
      {"sem", "bogus", "s"},
      {"sem", "acquire", "s", "--permits", "0"},
      {"latch"},
      {"latch", "set", "l", "x"},
      {"limit", "x"},
      {"limit", "x", "--rate", "1", "--per", "0"},
      {"delay-push", "q", "p"},
      {"delay-pop", "q", "--count", "-1"},
      {"inspect", "--type", "bogus"},
      {"--format", "xml", "inspect"},
      {"help", "bogus"},
      {"help", "sem", "bogus"},
      {"help", "lock", "exec"},
      {"help", "sem", "exec", "x"},
      {"--timeout", "-1s", "lock", "L"},
      {"--url", "bogus://x", "lock", "L"},
      {"lock", "L", "-E", "256"},
  };
  for (const auto& args : usage_errors) {
    CAPTURE(json(args).dump());
    auto r = rlock(redis, args);
    CAPTURE(r.err);
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.rfind("rlock: ", 0) == 0);
    CHECK(r.out.empty());
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

TEST_CASE("hostile: lock with a made-up owner says so even with -q, and how to unlock") {
  RedisServer redis;
  auto r = rlock(redis, {"-q", "lock", "made-up"});
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  REQUIRE(line_count(r.err) == 1);
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex("rlock unlock 'made-up' --owner '([^']+)'")));
  CHECK(rlock(redis, {"unlock", "made-up", "--owner", m[1].str()}).status == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("made-up")}) == 0);

  r = rlock(redis, {"-q", "lock", "given", "--owner", "me"});  // a given owner: no warning
  CHECK(r.status == 0);
  CHECK(r.err.empty());
}

}  // namespace
}  // namespace rlock::test

namespace rlock::test {
namespace {

// Runs bash's completion function for `words` (the last one being completed) and returns
// the offered words, one per line, sorted (SCAN's order is the server's hash order).
std::string bash_completion(const std::vector<std::string>& words) {
  std::string script = "source '" RLOCK_SOURCE_DIR "/completions/rlock.bash'; COMP_WORDS=(";
  for (const auto& w : words) script += "'" + w + "' ";
  script += "); COMP_CWORD=" + std::to_string(words.size() - 1) +
            "; _rlock; printf '%s\\n' \"${COMPREPLY[@]}\" | LC_ALL=C sort";
  std::string bin_dir = std::filesystem::path(rlock_binary()).parent_path().string();
  auto r = run({"bash", "-c", script}, {{"PATH", bin_dir + ":/usr/bin:/bin"}});
  REQUIRE(r.status == 0);
  return r.out;
}

TEST_CASE("completions: bash offers subcommands after help and held lock names") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "deploy prod", "--owner", "a"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "backup", "--owner", "a"}).status == 0);
  CHECK(bash_completion({"rlock", "help", ""}) ==
        "delay-pop\ndelay-"
        "push\ndoctor\nelect\nexec\nhelp\ninspect\nlatch\nlimit\nlock\nsem\nunlock\n");
  CHECK(bash_completion({"rlock", "latch", ""}) == "await\ncount-down\nset\nstatus\n");
  CHECK(bash_completion({"rlock", "latch", "await", "x", "-w", "i"}) == "inf\n");
  CHECK(bash_completion({"rlock", "--url", redis.url(), "unlock", ""}) == "backup\ndeploy prod\n");
  CHECK(bash_completion({"rlock", "--url", redis.url(), "inspect", "d"}) == "deploy prod\n");
  CHECK(bash_completion({"rlock", "lock", "x", "-w", "i"}) == "inf\n");
  // An unreachable server offers nothing, quickly and quietly.
  auto start = Clock::now();
  CHECK(bash_completion({"rlock", "--url", "redis://127.0.0.1:" + std::to_string(free_port()),
                         "unlock", ""}) == "\n");
  CHECK(ms_between(start) < 3000);
}

}  // namespace
}  // namespace rlock::test
