// Integration-test harness: real redis-server processes on free loopback ports, child
// processes with captured output, and a Redis client of its own (hiredis, independent of
// rlock's code) so that tests never trust what they test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ports.hpp"
#include "redis_server.hpp"
#include "test_certificates.hpp"
#include "test_files.hpp"
#include "timing.hpp"

namespace rlock::test {

using Env = std::vector<std::pair<std::string, std::string>>;
using nlohmann::json;

// Exit status as a shell reports it: the exit code, or 128+N if killed by signal N.
int decode_wait_status(int wait_status);

// What tests compare a status with when Spawned::wait() returned nullopt:
// `proc.wait(deadline(5s)).value_or(kStillRunning) == 0` reads well in failure output.
constexpr int kStillRunning = -1;

// A child process started with posix_spawnp: stdin from /dev/null, stdout and stderr on
// pipes read by this object, no descriptor inherited beyond 0-2, default signal
// dispositions and an empty signal mask, and the test environment (see child_env) plus
// env_extra. The destructor SIGKILLs (by pid) and reaps it if it still runs. Move-only.
class Spawned {
 public:
  explicit Spawned(const std::vector<std::string>& argv, const Env& env_extra = {});
  ~Spawned();
  Spawned(Spawned&&) noexcept;
  Spawned& operator=(Spawned&&) noexcept;

  pid_t pid() const;
  // Next complete stdout line without its '\n'; the unterminated rest once stdout is
  // closed; nullopt at the deadline or when nothing is left.
  std::optional<std::string> read_line(Clock::time_point deadline);
  // Same for stderr.
  std::optional<std::string> read_err_line(Clock::time_point deadline);
  // Waits for the process to exit and returns its status (see decode_wait_status), or
  // nullopt if it still runs at the deadline. Output is collected while waiting.
  std::optional<int> wait(Clock::time_point deadline);
  // True while the process has not exited (checks without blocking).
  bool running();
  // Sends `sig` to the process (by pid) unless it has already been reaped.
  void kill(int sig);
  // Everything read from stdout / stderr so far (all of it after wait()).
  const std::string& out() const;
  const std::string& err() const;
  // When the exit was observed (meaningful after wait() returned a status).
  Clock::time_point exit_time() const;

  // Waits until every process in `procs` has exited or the deadline passes, watching all
  // at once so that each exit_time() is accurate; true if all exited.
  static bool wait_all(std::initializer_list<Spawned*> procs, Clock::time_point deadline);

 private:
  struct State;
  static bool pump(const std::vector<State*>& procs, Clock::time_point deadline,
                   const std::function<bool()>& done);
  std::optional<std::string> take_line(bool from_stdout, Clock::time_point deadline);
  std::unique_ptr<State> s_;
};

struct RunResult {
  int status = -1;  // see decode_wait_status
  std::string out;
  std::string err;
  std::chrono::milliseconds elapsed{};
};

// Runs argv to completion (as Spawned) and returns its status and output. Past `timeout`
// the process is SIGKILLed and the test FAILs.
RunResult run(const std::vector<std::string>& argv, const Env& env_extra = {},
              std::chrono::milliseconds timeout = 30s);

// The environment children get: this process's, minus RLOCK_*, REDIS_URL and
// XDG_CONFIG_HOME, with HOME set to an empty directory of the suite (so no user config
// file leaks in), plus `extra` (which replaces variables of the same name).
std::vector<std::string> child_env(const Env& extra);

// Path of the rlock binary under test: $RLOCK_TEST_BINARY when set and not empty (e.g.
// the installed package's /usr/bin/rlock, scripts/package-test.sh), else the build's.
std::string rlock_binary();
// {rlock, --url, server.url(), args...}
std::vector<std::string> rlock_argv(const RedisServer& server,
                                    const std::vector<std::string>& args);
// Runs `rlock --url <server> args...`.
RunResult rlock(const RedisServer& server, const std::vector<std::string>& args,
                const Env& env_extra = {}, std::chrono::milliseconds timeout = 30s);
// Runs `rlock args...` without --url.
RunResult rlock_raw(const std::vector<std::string>& args, const Env& env_extra = {},
                    std::chrono::milliseconds timeout = 30s);
// Starts `rlock --url <server> args...` in the background.
Spawned spawn_rlock(const RedisServer& server, const std::vector<std::string>& args,
                    const Env& env_extra = {});

// Starts argv (as Spawned) under a helper process that is a child subreaper and never reaps
// the orphans it inherits, only argv's own process, whose status it exits with. Orphaned
// descendants that die stay zombies until the helper exits: the situation of a job in a
// container whose PID 1 does not reap (or is rlock itself). argv's process gets SIGKILL
// when the helper dies (PR_SET_PDEATHSIG), so a failing test leaves nothing behind.
Spawned spawn_under_lazy_reaper(const std::vector<std::string>& argv, const Env& env_extra = {});

// A process on the slave side of a fresh pseudo-terminal: the session leader, with the
// terminal as its controlling terminal and as stdin, stdout and stderr, so that an
// interactive shell run there has job control. The test plays the user on the master side.
// The destructor SIGKILLs it (by pid) and reaps it. Move-only.
class PtyProcess {
 public:
  explicit PtyProcess(const std::vector<std::string>& argv, const Env& env_extra = {});
  ~PtyProcess();
  PtyProcess(PtyProcess&&) noexcept;
  PtyProcess& operator=(PtyProcess&&) noexcept;

  pid_t pid() const;
  // Types `text` (e.g. "fg\n", or "\x1a" for ^Z).
  void send(std::string_view text);
  // Reads the terminal until `text` appears after the end of the previous match; true if it
  // did before the deadline.
  bool expect(std::string_view text, Clock::time_point deadline);
  // Reads the terminal until `done(output())` holds; true if it did before the deadline.
  bool await(const std::function<bool(const std::string&)>& done, Clock::time_point deadline);
  // Everything the terminal showed so far.
  const std::string& output() const;
  // Waits for the process to exit (see Spawned::wait); the terminal is read meanwhile.
  std::optional<int> wait(Clock::time_point deadline);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Parent pid of `pid` (from /proc/PID/stat); -1 if it is gone.
pid_t parent_of(pid_t pid);

// Waits (an event: pidfd + poll) until process `pid`, which need not be our child, has
// exited; true if it is gone within `timeout`.
bool wait_gone(pid_t pid, std::chrono::milliseconds timeout);

// Watches a process that is not our child (a job's grandchild, say) through a pidfd taken
// as soon as its pid is known, so a recycled pid can never be hit. The destructor SIGKILLs
// it if it is still alive, so a failing test leaves nothing behind. Move-only.
class PidGuard {
 public:
  explicit PidGuard(pid_t pid);
  ~PidGuard();
  PidGuard(PidGuard&&) noexcept = default;
  PidGuard& operator=(PidGuard&&) noexcept = default;

  pid_t pid() const { return pid_; }
  // True once the process has exited (within `timeout`).
  bool wait_gone(std::chrono::milliseconds timeout);

 private:
  pid_t pid_;
  Fd pidfd_;
};

// Re-checks `condition` every `interval` until it holds or `timeout` passes; returns whether
// it held. Only for state that offers no event to wait on (e.g. PUBSUB SHARDNUMSUB).
bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval = 10ms);

// Key layout of a lock with the default prefix (see the CLI spec).
std::string lock_key(std::string_view name, std::string_view prefix = "rlock:");
std::string fence_key(std::string_view name, std::string_view prefix = "rlock:");
std::string lock_channel(std::string_view name, std::string_view prefix = "rlock:");

// HGETALL as a JSON object field -> value (strings); {} when the key does not exist.
json hash_of(const RedisServer& server, const std::string& key, int db = 0);
// Number of subscribers of a pub/sub channel (PUBSUB SHARDNUMSUB: rlock subscribes with
// SSUBSCRIBE).
long long subscribers(const RedisServer& server, const std::string& channel);

// The waiters of the lock `name` that every member can hand it to: the fewest, over the
// members, of the queued waiters subscribed to their grant channel there. A quorum's waiter
// subscribes to a slow member after it has queued there, and a member passes over a waiter
// that does not listen: waiters queued on all members are in one order only once this
// counts them.
long long live_waiters(const RedisServer& server, std::string_view name,
                       std::string_view prefix = "rlock:");

// Parses `text` as one JSON document; FAILs the test with the text if it is not JSON.
json parse_json(const std::string& text);
// The JSON object on each line of `text` (JSON-lines output such as delay-pop's).
std::vector<json> lines_of(const std::string& text);
// The sorted member names of a JSON object, as a JSON array (readable in failure output).
json keys_of(const json& object);
// Every key with its type, whether it expires and its serialized value: what "nothing
// changed in Redis" compares.
std::map<std::string, std::string> snapshot(const RedisServer& redis);
// Text joined by a stream: GCC 12 at -O3 warns falsely (-Wrestrict) on "lit" + std::string.
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Number of lines in `text`: its '\n' count, plus one for an unterminated last line.
int line_count(std::string_view text);

}  // namespace rlock::test
