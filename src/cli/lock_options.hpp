#pragma once

#include <string>
#include <vector>

#include "cli/console.hpp"
#include "prim/lock.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"

namespace CLI {
class App;
}

namespace rlock::cli {

// The options `lock` and `exec` share (micromamba's common_options idea).
struct LockFlags {
  std::vector<std::string> names;  // one, or with Names::kSeveral several (a MultiLock)
  std::string owner;
  std::string lease = "30s";
  std::string wait;  // empty: don't wait
  bool no_wait = false;
  bool shared = false;  // -s: a read hold (any number at once, no writer)
  std::string note;     // --note, checked as it is read ("": none)
  bool one_of = false;  // --one-of: the names are a pool, any one of them will do
  std::string count;    // --count K: K members of the pool (empty: not given)
  int conflict_exit_code = kExitNotNow;
  bool supersede = false;       // --supersede
  bool cancel_running = false;  // --cancel-running
  std::string priority;         // --priority N, as given ("" = not given)
};

// Parsed and checked.
struct LockRequest {
  std::string name;                // the first name given
  std::vector<std::string> names;  // every name, as given (distinct)
  std::string owner;
  Millis lease{0};
  Deadline wait_until{};
  Millis wait{0};  // how long --wait allows (0: no wait)
  prim::LockMode mode = prim::LockMode::kExclusive;
  std::string note;  // --note ("": none)
  int conflict_exit_code = kExitNotNow;
  bool owner_made_up = false;  // no --owner, RLOCK_OWNER nor config owner: host:pid:random
  prim::QueuePolicy policy;    // --supersede, --cancel-running, --priority
  bool pool = false;           // --one-of: any `count` of `names` (prim::Pool)
  size_t count = 1;
};

// Whether a subcommand takes one NAME or several (lock and exec: all of them or none).
enum class Names { kOne, kSeveral };
// Declares NAME, --owner, --lease, -w, -n, -E and, where the flag table gives them to the
// subcommand (a lock's holds, not a semaphore's permits), -s, -x and the queue policies
// (--supersede, --cancel-running, --priority).
void add_lock_flags(CLI::App& sub, LockFlags& flags, Names names = Names::kOne);

// Declares -E/--conflict-exit-code N (0-255, decimal), storing into `code`.
void add_conflict_exit_code_flag(CLI::App& sub, int& code);

// Validates the names (a name given twice too) and durations and picks the owner. Throws
// UsageError.
LockRequest resolve_lock_request(const LockFlags& flags, const Settings& settings);

// The owner for commands that act on an existing hold: --owner, RLOCK_OWNER or config.
std::string explicit_owner(const std::string& flag, const Settings& settings);

Json holders_json(const std::vector<prim::Holder>& holders);
// "a:1:ff (count 1), b:2:ee (count 2)" for messages.
std::string describe_holders(const std::vector<prim::Holder>& holders);

// The hooks that make -v explain a wait.
prim::WaitHooks wait_hooks(const Console& console, const std::string& name);

// One line for a lock that was not acquired: who holds it and for how long, and how long
// this request waited for it (`waited` > 0).
std::string describe_busy(const std::string& name, const prim::Busy& busy,
                          Millis waited = Millis(0));

// The line for a wait superseded by a newer --supersede request (exit kExitSuperseded).
std::string describe_superseded(const std::string& name, const prim::Busy& busy);

// Checks the names of a command that takes several: each valid, none given twice, at most
// kMaxAncestors (16) of them. Throws UsageError naming the first bad one.
void validate_names(const std::vector<std::string>& names);

// "'a', 'b' and 'c'" for messages about several locks.
std::string quoted_names(const std::vector<std::string>& names);
// "lock 'a'", or "locks 'a' and 'b'" for several.
std::string locks_named(const std::vector<std::string>& names);

}  // namespace rlock::cli
