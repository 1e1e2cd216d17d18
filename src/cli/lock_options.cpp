#include "cli/lock_options.hpp"

#include <CLI/CLI.hpp>

#include "cli/ancestry.hpp"
#include "cli/flag_options.hpp"
#include "cli/wait_line.hpp"
#include "cli/whole_flag.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"
#include "util/owner.hpp"

namespace rlock::cli {
namespace {

// An exit code for -E: decimal digits only (CLI11 would read `010` as octal 8).
int parse_exit_code(const std::string& text) {
  return static_cast<int>(parse_whole_flag(text, "-E/--conflict-exit-code", 0, 255));
}

// --supersede, --cancel-running and --priority order one lock's queue (without --wait
// there is no queue entry, but an exec hold taken with --supersede may be cancelled).
prim::QueuePolicy resolve_policy(const LockFlags& f) {
  prim::QueuePolicy p;
  if (!f.priority.empty())
    p.priority =
        static_cast<int>(parse_whole_flag(f.priority, "--priority", 0, prim::kMaxPriority));
  if (f.cancel_running && !f.supersede)
    throw UsageError("--cancel-running needs --supersede (it cancels a --supersede job)");
  p.supersede = f.supersede;
  p.cancel_running = f.cancel_running;
  const char* given = f.supersede ? "--supersede" : !f.priority.empty() ? "--priority" : nullptr;
  if (given && (f.names.size() > 1 || f.one_of))
    throw UsageError(std::string(given) + " orders one lock's queue: give one NAME, no --one-of");
  return p;
}

}  // namespace

void add_lock_flags(CLI::App& sub, LockFlags& f, Names names) {
  auto* name = add_table_option(sub, "name", f.names)->required();
  if (names == Names::kOne) name->expected(1);
  add_table_option(sub, "--owner", f.owner);
  add_table_option(sub, "--lease", f.lease);
  // elect waits forever: it has no --wait, and so no busy outcome to give a code either.
  if (table_has(sub, "--wait")) {
    // Checked as it is read: an empty value would otherwise mean "not given".
    auto* wait = add_table_option_function(sub, "--wait", [&f](const std::string& v) {
      parse_duration(v, "--wait", /*allow_forever=*/true);
      f.wait = v;
    });
    add_table_flag(sub, "--no-wait", f.no_wait)->excludes(wait);
  }
  // A semaphore's permits are neither shared nor exclusive.
  if (table_has(sub, "--shared")) {
    auto* shared = add_table_flag(sub, "--shared", f.shared);
    add_table_flag(sub, "--exclusive")->excludes(shared);
  }
  if (table_has(sub, "--note")) {
    // Checked as it is read: an empty value would otherwise mean "not given".
    add_table_option_function(sub, "--note", [&f](const std::string& v) {
      validate_note(v);
      f.note = v;
    });
  }
  if (table_has(sub, "--one-of")) {
    add_table_flag(sub, "--one-of", f.one_of);
    add_table_option(sub, "--count", f.count);
  }
  if (table_has(sub, "--conflict-exit-code"))
    add_conflict_exit_code_flag(sub, f.conflict_exit_code);
  if (table_has(sub, "--supersede")) {
    add_table_flag(sub, "--supersede", f.supersede);
    add_table_flag(sub, "--cancel-running", f.cancel_running);
    add_table_option_function(sub, "--priority", [&f](const std::string& v) {
      parse_whole_flag(v, "--priority", 0, prim::kMaxPriority);
      f.priority = v;
    });
  }
}

void add_conflict_exit_code_flag(CLI::App& sub, int& code) {
  add_table_option_function(sub, "--conflict-exit-code",
                            [&code](const std::string& v) { code = parse_exit_code(v); });
}

LockRequest resolve_lock_request(const LockFlags& f, const Settings& s) {
  validate_names(f.names);
  LockRequest r;
  r.names = f.names;
  r.name = f.names.front();
  r.lease = parse_duration(f.lease, "--lease");
  if (r.lease.count() < 1) throw UsageError("--lease must be at least 1ms");
  Millis wait =
      f.wait.empty() ? Millis(0) : parse_duration(f.wait, "--wait", /*allow_forever=*/true);
  r.wait_until = SteadyClock::now() + wait;
  r.wait = wait;
  r.mode = f.shared ? prim::LockMode::kShared : prim::LockMode::kExclusive;
  if (!f.note.empty() && f.shared)
    throw UsageError("--note is for exclusive holds; a shared (--shared) hold keeps none");
  r.note = f.note;
  r.conflict_exit_code = f.conflict_exit_code;
  r.policy = resolve_policy(f);
  r.pool = f.one_of;
  if (!f.count.empty()) {
    if (!f.one_of) throw UsageError("--count takes K members of a pool: it needs --one-of");
    r.count = static_cast<size_t>(
        parse_whole_flag(f.count, "--count", 1, static_cast<long long>(f.names.size())));
  }
  r.owner_made_up = f.owner.empty() && !s.owner;
  r.owner = !f.owner.empty() ? f.owner : s.owner.value_or(default_owner());
  validate_owner(r.owner);
  return r;
}

std::string explicit_owner(const std::string& flag, const Settings& s) {
  if (!flag.empty() || s.owner) {
    std::string owner = !flag.empty() ? flag : *s.owner;
    validate_owner(owner);
    return owner;
  }
  throw UsageError(
      "unlock needs --owner ID (the owner `rlock lock` printed) or RLOCK_OWNER, or --force");
}

Json holders_json(const std::vector<prim::Holder>& holders) {
  Json arr = Json::array();
  for (const auto& h : holders) arr.push_back({{"owner", h.owner}, {"count", h.count}});
  return arr;
}

std::string describe_holders(const std::vector<prim::Holder>& holders) {
  std::string out;
  for (const auto& h : holders) {
    if (!out.empty()) out += ", ";
    out += h.owner + " (count " + std::to_string(h.count) + ")";
  }
  return out.empty() ? "nobody" : out;
}

prim::WaitHooks wait_hooks(const Console& console, const std::string& name) {
  prim::WaitHooks hooks;
  if (console.verbose()) {
    hooks.on_wait = [&console, name](const prim::Waitable::Step& busy, Millis left) {
      std::string lease = busy.holder_ttl.count() >= 0
                              ? format_duration(busy.holder_ttl) + " of lease left"
                              : "no lease";
      console.explain("waiting for lock '" + name + "' held by " +
                      (busy.holders.empty() ? "nobody" : busy.holders) + " (" + lease +
                      "); queued: a release hands it over, or retrying when the lease runs out; " +
                      (left > kMaxDuration / 2 ? std::string("no time limit")
                                               : "giving up in " + format_duration(left)));
    };
    hooks.on_reconnect = [&console](const std::string& why) {
      console.explain("reconnecting to keep the place in the queue: " + why);
    };
  }
  return WaitLine::attach(WaitLine::on_terminal(console.quiet(), "lock '" + name + "'"), hooks);
}

void validate_names(const std::vector<std::string>& names) {
  // A job's nested rlock learns the holds it runs under from at most kMaxAncestors entries
  // of RLOCK_HOLDS: each of the job's own holds must be among them.
  if (names.size() > kMaxAncestors) {
    throw UsageError("at most " + std::to_string(kMaxAncestors) + " lock names at once, not " +
                     std::to_string(names.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    validate_name(names[i]);
    // Twice the same lock is no "several": a typo, or a list built wrong.
    for (size_t j = 0; j < i; ++j) {
      if (names[j] == names[i])
        throw UsageError("lock name '" + names[i] + "' is given twice; give each lock once");
    }
  }
}

std::string quoted_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

std::string locks_named(const std::vector<std::string>& names) {
  return (names.size() > 1 ? "locks " : "lock ") + quoted_names(names);
}

std::string describe_superseded(const std::string& name, const prim::Busy& busy) {
  return "superseded: a newer --supersede request for lock '" + name + "' by owner '" +
         busy.superseded_by + "' took this one's turn; it left the queue";
}

std::string describe_busy(const std::string& name, const prim::Busy& busy, Millis waited) {
  std::string line =
      (waited.count() > 0 ? "gave up after waiting " + format_duration(waited) + ": lock '"
                          : "lock '") +
      name + "' is held by " + describe_holders(busy.holders);
  auto listed = static_cast<long long>(busy.holders.size());
  if (busy.holders_total > listed)
    line += " and " + std::to_string(busy.holders_total - listed) + " more";
  if (busy.same_owner_exec)
    line += " in another `rlock exec` (concurrent execs never share a hold, whatever the owner)";
  if (busy.ttl.count() >= 0) line += ", lease " + format_duration(busy.ttl) + " left";
  return line;
}

}  // namespace rlock::cli
