// Every key a script touches is one it was given in KEYS: servers that enforce it refuse
// the script otherwise (Dragonfly by default, a Cluster's slot checks only by luck), and a
// key built inside a script is one rlock's clean-up, --prefix and inspect never see. Each
// script runs here at least once while MONITOR shows, in order, every EVAL/EVALSHA with its
// KEYS and each command the script ran; COMMAND GETKEYS names the keys of those commands.
#include <doctest/doctest.h>

#include <csignal>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness.hpp"
#include "redis/script.hpp"
#include "redis/scripts.hpp"

namespace rlock::test {
namespace {

// The arguments of a MONITOR line as redis-cli prints them: `TS [DB SOURCE] "a" "b" ...`,
// each quoted with C-like escapes. `source` is "lua" for a command a script ran.
struct Monitored {
  std::string source;
  std::vector<std::string> argv;
};

std::optional<Monitored> parse_monitor_line(const std::string& line) {
  size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  Monitored m;
  std::string inside = line.substr(open + 1, close - open - 1);
  m.source = inside.substr(inside.find(' ') + 1);
  for (size_t i = close + 1; i < line.size(); ++i) {
    if (line[i] != '"') continue;
    std::string arg;
    for (++i; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] != '\\' || i + 1 >= line.size()) {
        arg += line[i];
        continue;
      }
      char c = line[++i];
      if (c == 'x' && i + 2 < line.size()) {
        arg += static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        arg += c == 'n'   ? '\n'
               : c == 'r' ? '\r'
               : c == 't' ? '\t'
               : c == 'a' ? '\a'
               : c == 'b' ? '\b'
                          : c;
      }
    }
    m.argv.push_back(arg);
  }
  if (m.argv.empty()) return std::nullopt;
  return m;
}

const redis::Script* const kScripts[] = {
    &redis::scripts::latch_count_down,   &redis::scripts::latch_read,
    &redis::scripts::latch_set,          &redis::scripts::limit_decide,
    &redis::scripts::limit_reset,        &redis::scripts::lock_abandon,
    &redis::scripts::lock_acquire,       &redis::scripts::lock_fence_raise,
    &redis::scripts::lock_force_release, &redis::scripts::lock_release,
    &redis::scripts::lock_renew,         &redis::scripts::lock_return,
    &redis::scripts::queue_dead_pop,     &redis::scripts::queue_finish,
    &redis::scripts::queue_forget,       &redis::scripts::queue_inspect,
    &redis::scripts::queue_pop,          &redis::scripts::queue_push,
    &redis::scripts::queue_put_back,     &redis::scripts::queue_renew,
    &redis::scripts::quorum_member,      &redis::scripts::sem_acquire,
    &redis::scripts::sem_release,        &redis::scripts::sem_renew,
    &redis::scripts::sem_status,
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The script an EVAL or EVALSHA runs, by its SHA1 or its source.
std::string script_name(const std::vector<std::string>& argv) {
  for (const redis::Script* s : kScripts) {
    if (upper(argv[0]) == "EVALSHA" ? argv[1] == s->sha1 : argv[1] == s->source) return s->name;
  }
  return "(not rlock's: " + argv[1].substr(0, 40) + ")";
}

// Watches `server` with `redis-cli monitor` from construction until lines() is called.
class Monitor {
 public:
  explicit Monitor(const RedisServer& server)
      : server_(server), cli_({"redis-cli", "-p", std::to_string(server.port()), "monitor"}) {
    REQUIRE(cli_.read_line(deadline(10s)) == std::optional<std::string>("OK"));
  }

  // Everything monitored up to now: a marker is sent and read back.
  std::vector<Monitored> lines() {
    const std::string marker = "script-keys-test-end";
    server_.cmd({"ECHO", marker});
    std::vector<Monitored> out;
    for (;;) {
      auto line = cli_.read_line(deadline(10s));
      REQUIRE(line.has_value());
      auto m = parse_monitor_line(*line);
      if (!m) continue;
      if (m->argv.size() == 2 && upper(m->argv[0]) == "ECHO" && m->argv[1] == marker) return out;
      out.push_back(std::move(*m));
    }
  }

 private:
  const RedisServer& server_;
  Spawned cli_;
};

// The keys of a command, as the server finds them.
std::vector<std::string> command_keys(const RedisServer& server,
                                      const std::vector<std::string>& argv) {
  std::vector<std::string> ask = {"COMMAND", "GETKEYS"};
  ask.insert(ask.end(), argv.begin(), argv.end());
  try {
    return server.cmd(ask);
  } catch (const RedisError&) {
    return {};  // a command without keys (GETKEYS refuses those)
  }
}

// What the monitored scripts did: per script name, how often it ran and every key it
// touched that its KEYS did not name.
struct ScriptUse {
  int runs = 0;
  std::set<std::string> undeclared;
};

void judge(const RedisServer& server, const std::vector<Monitored>& lines,
           std::map<std::string, ScriptUse>& use) {
  std::set<std::string> declared;
  std::string current;
  for (const Monitored& m : lines) {
    const std::string cmd = upper(m.argv[0]);
    if (m.source != "lua") {
      current.clear();
      if ((cmd == "EVAL" || cmd == "EVALSHA") && m.argv.size() >= 3) {
        current = script_name(m.argv);
        ++use[current].runs;
        declared.clear();
        const size_t n = std::stoul(m.argv[2]);
        for (size_t i = 0; i < n && 3 + i < m.argv.size(); ++i) declared.insert(m.argv[3 + i]);
      }
      continue;
    }
    INFO("script " << current << ": " << m.argv[0]);
    REQUIRE(!current.empty());  // a script's commands follow its EVAL
    for (const std::string& k : command_keys(server, m.argv)) {
      if (!declared.count(k)) use[current].undeclared.insert(cmd + " " + k);
    }
  }
}

RunResult must(const RedisServer& redis, const std::vector<std::string>& args, int status = 0) {
  auto r = rlock(redis, args);
  INFO("rlock " << args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err);
  CHECK(r.status == status);
  return r;
}

// Each lock script: an acquisition, a busy try, a waiter handed the lock, renewals of a
// short lease, a release and a forced one; on a quorum a member ahead on the fencing token
// makes the others raise theirs (lock_fence_raise).
void use_locks(const RedisServer& redis) {
  // Tokens that differ on every member: whichever majority answers first disagrees. (The
  // first of members() is the quorum itself, whose cmd() acts on every member.)
  if (test_topology() == "quorum") {
    redis.members()[1]->cmd({"SET", "rlock:lock:{L}:fence", "90000000000000000"});
    redis.members()[2]->cmd({"SET", "rlock:lock:{L}:fence", "80000000000000000"});
  }
  must(redis, {"lock", "L", "--owner", "a", "--lease", "30s"});
  must(redis, {"lock", "L", "--owner", "b", "-n"}, 75);
  Spawned waiter = spawn_rlock(redis, {"lock", "L", "--owner", "c", "--wait", "20s"});
  REQUIRE(poll_until(
      [&] {
        return redis.on_majority({"ZCARD", "rlock:lock:{L}:waiters"}) == 1;
      },
      10s));
  // A waiter stopped while it waits gives its place up (lock_abandon).
  Spawned stopped = spawn_rlock(redis, {"lock", "L", "--owner", "d", "--wait", "20s"});
  REQUIRE(poll_until(
      [&] {
        return redis.on_majority({"ZCARD", "rlock:lock:{L}:waiters"}) == 2;
      },
      10s));
  stopped.kill(SIGTERM);
  REQUIRE(stopped.wait(deadline(10s)).has_value());
  must(redis, {"unlock", "L", "--owner", "a"});
  CHECK(waiter.wait(deadline(20s)) == std::optional<int>(0));
  must(redis, {"lock", "R", "--owner", "r", "--shared"});
  must(redis, {"exec", "--lease", "1s", "E", "--", "sleep", "1.5"});
  must(redis, {"unlock", "--force", "L"});
}

void use_the_rest(const RedisServer& redis) {
  auto taken = parse_json(must(redis, {"sem", "acquire", "S", "--permits", "2"}).out);
  must(redis, {"sem", "status", "S"});
  must(redis, {"sem", "exec", "S", "--permits", "2", "--lease", "1s", "--", "sleep", "1.5"});
  must(redis, {"sem", "release", "S", "--permit", taken.at("permits")[0].get<std::string>()});
  must(redis, {"latch", "set", "C", "2"});
  must(redis, {"latch", "count-down", "C"});
  must(redis, {"latch", "status", "C"});
  must(redis, {"limit", "G", "--rate", "5", "--per", "1s"});
  must(redis, {"limit", "G", "--reset"});
  must(redis, {"delay-push", "Q", "one", "--delay", "0"});
  must(redis, {"delay-push", "Q", "two", "--delay", "0"});
  must(redis,
       {"delay-pop", "Q", "--visibility", "1s", "--", "sh", "-c", "cat >/dev/null; sleep 1.5"});
  must(redis, {"delay-pop", "Q", "--max-deliveries", "1", "--", "false"}, 1);
  must(redis, {"delay-pop", "Q", "--dead"});
  // Items taken but not printed (a full disk) are put back.
  must(redis, {"delay-push", "Q", "three", "--delay", "0"});
  auto full = run({"sh", "-c", "\"$RL\" --url \"$URL\" delay-pop Q > /dev/full"},
                  {{"RL", rlock_binary()}, {"URL", redis.topology_url()}});
  CHECK(full.status == 74);
  // A slot claimed and its run ended by the release; a slot skipped while the lock is held.
  must(redis, {"exec", "--once-per", "1d", "O", "--", "true"});
  must(redis, {"lock", "P", "--owner", "p"});
  must(redis, {"exec", "--once-per", "1d", "P", "--", "true"}, 75);
  must(redis, {"inspect"});
}

TEST_CASE("scripts: every key a script touches was given to it in KEYS") {
  RedisServer redis;
  std::vector<std::unique_ptr<Monitor>> monitors;
  for (const RedisServer* m : redis.members()) monitors.push_back(std::make_unique<Monitor>(*m));
  use_locks(redis);
  const bool quorum = test_topology() == "quorum";
  if (!quorum) use_the_rest(redis);
  // The check itself: a script that builds a key is caught.
  const std::string builds_key = "return redis.call('EXISTS', KEYS[1] .. ':built')";
  redis.members()[0]->cmd({"EVAL", builds_key, "1", "rlock:lock:{L}"});
  std::map<std::string, ScriptUse> use;
  for (size_t i = 0; i < monitors.size(); ++i)
    judge(*redis.members()[i], monitors[i]->lines(), use);
  const std::string foreign = "(not rlock's: " + builds_key.substr(0, 40) + ")";
  CHECK(use[foreign].undeclared == std::set<std::string>{"EXISTS rlock:lock:{L}:built"});
  use.erase(foreign);
  for (const auto& [name, u] : use) {
    INFO("script " << name << " touched keys not in its KEYS");
    CHECK(u.undeclared == std::set<std::string>{});
  }
  // Each script ran: a script this test stopped reaching would go unchecked. Only a quorum
  // runs its member check and the token's write-back; the rest refuse a quorum.
  for (const redis::Script* s : kScripts) {
    const std::string name = s->name;
    const bool quorum_only = name == "quorum_member" || name == "lock_fence_raise";
    // Only a quorum's grant that falls short of a majority gives a hold back this way.
    if (name == "lock_return") continue;
    const bool lock = name.starts_with("lock_");
    if (quorum ? !(lock || quorum_only) : quorum_only) continue;
    CAPTURE(name);
    CHECK(use[name].runs > 0);
  }
}

}  // namespace
}  // namespace rlock::test
