#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/ancestry.hpp"
#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/lock_options.hpp"
#include "cli/lock_set.hpp"
#include "cli/redisson_lock.hpp"
#include "cli/stop_signals.hpp"
#include "prim/multi_lock.hpp"
#include "util/duration.hpp"

namespace rlock::cli {
namespace {

// The command that releases what was taken: `names` are those taken (a pool's member).
std::string unlock_command(const LockRequest& req, const std::vector<std::string>& names_taken) {
  std::string names;
  for (const auto& n : names_taken) names += " " + shell_quote(n);
  return std::string("rlock unlock ") + (req.mode == prim::LockMode::kShared ? "-s" : "") +
         names.substr(req.mode == prim::LockMode::kShared ? 0 : 1) + " --owner " +
         shell_quote(req.owner);
}

// What stands when the result could not be printed: the holds, and how to give them back.
std::vector<std::string> names_of(const std::vector<prim::MultiLock::Taken>& taken) {
  std::vector<std::string> out;
  for (const auto& t : taken) out.push_back(t.name);
  return out;
}

std::string held_line(const LockRequest& req, const std::vector<prim::MultiLock::Taken>& taken) {
  const std::string shared = req.mode == prim::LockMode::kShared ? "shared, " : "";
  const std::string unlock = unlock_command(req, names_of(taken));
  if (taken.size() == 1) {
    const prim::Held& held = taken.front().held;
    return "lock '" + taken.front().name + "' is held all the same (" + shared + "owner '" +
           req.owner + "', count " + std::to_string(held.count) + ", fence " +
           std::to_string(held.fence) + ", lease " + format_duration(held.lease) +
           "); give it back with: " + unlock;
  }
  std::string each;
  for (const auto& t : taken) {
    each += (each.empty() ? "'" : ", '") + t.name + "' (count " + std::to_string(t.held.count) +
            ", fence " + std::to_string(t.held.fence) + ")";
  }
  return "locks " + each + " are held all the same (" + shared + "owner '" + req.owner +
         "', lease " + format_duration(req.lease) + "); give them back with: " + unlock;
}

// `lock` without an owner holds for a made-up one that only this line (and stdout, which
// -q hides) tells: said on stderr even with -q, with the command that releases it.
std::string made_up_owner_warning(const LockRequest& req,
                                  const std::vector<prim::MultiLock::Taken>& taken) {
  const auto names = names_of(taken);
  return "no --owner or RLOCK_OWNER: holding " + locks_named(names) + " as owner '" + req.owner +
         "'; release " + (names.size() > 1 ? "them" : "it") +
         " with: " + unlock_command(req, names);
}

// The object `lock` prints for one lock it holds (the whole result for a single name).
Json held_json(const LockRequest& req, const std::string& name, const prim::Held& held) {
  Json out = {{"name", name},        {"owner", req.owner},  {"acquired", true},
              {"count", held.count}, {"fence", held.fence}, {"lease_ms", held.lease.count()}};
  if (req.mode == prim::LockMode::kShared) out["shared"] = true;
  if (held.replicas_acked >= 0) out["replicas_acked"] = held.replicas_acked;
  if (held.validity.count() >= 0) out["validity_ms"] = held.validity.count();
  return out;
}

// The object `lock` prints for a lock it found busy (the whole result for a single name).
Json busy_json(const std::string& name, const prim::Busy& busy) {
  return {{"name", name},
          {"acquired", false},
          {"holders", holders_json(busy.holders)},
          {"holders_total", busy.holders_total},
          {"ttl_ms", busy.ttl.count()}};
}

Json held_result(const LockRequest& req, const std::vector<prim::MultiLock::Taken>& taken) {
  if (taken.size() == 1) return held_json(req, taken.front().name, taken.front().held);
  Json each = Json::array();
  for (const auto& t : taken) each.push_back(held_json(req, t.name, t.held));
  return {{"acquired", true}, {"locks", each}};
}

// The line on stderr: for one name only after a wait (without one, stdout's result is the
// whole answer); for several always, as it names the busy one of them.
int report_busy(const LockRequest& req, const Console& console, const LockSet& locks,
                const prim::MultiLock::Refused& refused) {
  if (req.pool) {
    // A pool's busy result: every member's holders, the soonest lease's end.
    if (req.wait.count() > 0 || req.names.size() > 1)
      console.notice(locks.describe_refused(refused, req.wait));
    Json busy = busy_json(refused.name, refused.busy);
    busy.erase("name");
    busy["one_of"] = req.names;
    console.result(busy);
    return req.conflict_exit_code;
  }
  std::string line = describe_busy(refused.name, refused.busy, req.wait);
  if (req.names.size() == 1) {
    if (req.wait.count() > 0) console.notice(line);
    console.result(busy_json(refused.name, refused.busy));
  } else {
    console.notice(line + "; none of " + locks_named(req.names) + " is held");
    console.result({{"acquired", false}, {"busy", busy_json(refused.name, refused.busy)}});
  }
  return req.conflict_exit_code;
}

std::string interrupted_line(const LockRequest& req, const LockSet& locks, int signo) {
  std::string line = "interrupted by signal " + std::to_string(signo);
  if (req.pool) return line + " while waiting for " + locks.named() + "; none of them is held";
  if (req.names.size() == 1)
    return line + " while waiting for lock '" + req.name + "'; it is not held";
  return line + "; none of " + locks_named(req.names) + " is held";
}

// One name is the case n=1 of several: all of them or none (see prim::MultiLock).
int run_lock(const LockRequest& req, const Console& console, const Settings& settings) {
  // Only a wait takes the stop signals: without one, ^C ends rlock at once, as it would
  // any command (nothing is queued, and a hold granted is either reported or not taken).
  // Several names take them all the same: a later lock's acquisition holds the earlier ones,
  // which a signal must not leave held.
  std::optional<StopSignals> stops;
  if (req.wait.count() > 0 || req.names.size() > 1) stops.emplace();
  auto hooks_for = [&](const std::string& name) {
    prim::WaitHooks hooks = wait_hooks(console, name);
    return stops ? stops->attach(std::move(hooks)) : hooks;
  };
  redis::Topology topology = open_topology(settings);
  auto layout = make_layout(settings);
  select_redisson_lock(*layout, settings, req.mode == prim::LockMode::kShared, "lock", &req);
  LockSet locks(topology, *layout, req);
  locks.set_ancestry(inherited_holds());
  locks.configure(req);
  auto outcome = locks.acquire(req, hooks_for, prim::HoldKind::kLock);
  const auto* refused = std::get_if<prim::MultiLock::Refused>(&outcome);
  if (int signo = stops ? stops->stop_signal() : 0) {  // while connecting, waiting, or at the grant
    if (!refused)
      locks.give_back(req.owner, std::get<prim::MultiLock::Acquired>(outcome).taken,
                      prim::HoldKind::kLock);
    console.notice(interrupted_line(req, locks, signo));
    return 128 + signo;
  }
  if (refused && !refused->busy.superseded_by.empty()) {
    console.notice(describe_superseded(refused->name, refused->busy));
    console.result({{"name", refused->name},
                    {"acquired", false},
                    {"superseded_by", refused->busy.superseded_by}});
    return kExitSuperseded;
  }
  if (refused) return report_busy(req, console, locks, *refused);
  const auto& taken = std::get<prim::MultiLock::Acquired>(outcome).taken;
  if (req.owner_made_up) console.warning(made_up_owner_warning(req, taken));
  console.result(held_result(req, taken), held_line(req, taken));
  return 0;
}

}  // namespace

Runner define_lock_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto flags = std::make_shared<LockFlags>();
  auto* sub = &app;
  add_lock_flags(*sub, *flags, Names::kSeveral);
  sub->footer(R"(Prints {"name","owner","acquired":true,"count","fence","lease_ms"}; when the lock
is held by someone else prints {"name","acquired":false,"holders","holders_total","ttl_ms"}
and exits 75 (or -E); "holders" lists the writer and at most 100 readers. With
--sync-replicas N the result also has "replicas_acked" (how many acknowledged the hold).
A --supersede wait that a newer --supersede request replaced prints
{"name","acquired":false,"superseded_by"} and exits 79.
The same owner again re-enters (count + 1); a re-entry never shortens the lease in force.
Several NAMEs: all of them or none (taken in sorted order, see rlock help exec); prints
{"acquired":true,"locks":[...]} with one object per name as above, in the order given, or
{"acquired":false,"busy":{...}} with the lock found busy (75, or -E), holding none.
--one-of: the NAMEs are a pool; prints the member taken as above ("name"), or with
--count K the K taken as for several names; busy, {"acquired":false,"one_of":[NAMEs],
"holders",...} with the holders of the members waited for.

Examples:
  rlock lock deploy-prod --owner ci-42 --lease 10m     # hold for 10 minutes
  rlock lock deploy-prod --owner ci-42 --lease 10m     # same owner again: re-enter, extend
  rlock lock backup --wait 30s                          # wait up to 30s for it
  rlock lock -s reports --owner reader-1                # a shared (read) hold
  rlock lock db deploy-slot --owner ci-42 --wait 5m     # both, or none
  rlock lock --one-of stg-1 stg-2 stg-3 --owner ci-42   # any one of them
  rlock unlock deploy-prod --owner ci-42

Without --owner (or RLOCK_OWNER) the owner is made up (host:pid:random) and a warning on
stderr, even with -q, says how to unlock it.)");
  return {[flags](const Settings& settings) {
    Console console(settings);
    LockRequest req = resolve_lock_request(*flags, settings);
    return run_lock(req, console, settings);
  }};
}

}  // namespace rlock::cli
