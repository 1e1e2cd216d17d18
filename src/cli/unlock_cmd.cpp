#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "cli/lock_options.hpp"
#include "cli/redisson_lock.hpp"
#include "prim/lock.hpp"
#include "prim/redisson_semaphore.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

struct UnlockFlags {
  std::vector<std::string> names;
  std::string owner;
  bool force = false;
  bool shared = false;
};

// Each holder removed, with its note where it left one, so that whoever forces a
// reservation sees what it was for.
Json force_unlock(prim::Lock& lock) {
  auto holders = lock.force_release();
  Json listed = holders_json(holders);
  for (size_t i = 0; i < holders.size(); ++i) {
    if (!holders[i].note.empty()) listed[i]["note"] = holders[i].note;
  }
  return {{"name", lock.name()}, {"forced", true}, {"holders", listed}};
}

// Releases one level of `lock` held by `owner`: the result object, or the one-line reason
// why nothing changed (`refused`).
Json release_level(prim::Lock& lock, const std::string& owner, prim::LockMode mode,
                   std::string& refused) {
  auto r = lock.release(owner, Millis(0), "", mode);
  using Outcome = prim::Release::Outcome;
  const std::string& name = lock.name();
  if (r.outcome == Outcome::kExecRunning) {
    refused = "lock '" + name + "' is held by a running `rlock exec` of " + owner +
              "; unlock cannot end that hold (stop the exec, or use --force)";
  } else if (r.outcome == Outcome::kNotHeld && r.holders.empty()) {
    refused = "lock '" + name + "' is not held; nothing to unlock";
  } else if (r.outcome == Outcome::kNotHeld) {
    refused = "lock '" + name + "' is held by " + describe_holders(r.holders) + ", not by " +
              owner + "; nothing changed (use --force to release it anyway)";
  } else {
    return {
        {"name", name}, {"owner", owner}, {"released", r.remaining == 0}, {"count", r.remaining}};
  }
  return nullptr;
}

// Each name is released (or forced) on its own, whatever the others' outcome. One name's
// result is its object, and its error is the command's; several print the object of each
// one unlocked, and the line on stderr names each one that was not (and what was unlocked
// all the same), with the exit code of the first that failed (not merely not held).
int run_unlock(const UnlockFlags& f, const std::string& owner, const Console& console,
               const Settings& settings) {
  redis::Topology topology = open_topology(settings);
  auto layout = make_layout(settings);
  select_redisson_lock(*layout, settings, f.shared, "unlock");
  auto mode = f.shared ? prim::LockMode::kShared : prim::LockMode::kExclusive;
  const bool one = f.names.size() == 1;
  Json each = Json::array();
  std::vector<std::string> refused, unlocked;
  int failed = 0;
  for (const auto& name : f.names) {
    prim::Lock lock(topology, *layout, name);
    std::string why;
    try {
      Json result = f.force ? force_unlock(lock) : release_level(lock, owner, mode, why);
      if (why.empty()) {
        each.push_back(std::move(result));
        unlocked.push_back(name);
      }
    } catch (const Error& e) {
      if (one) throw;
      // The names before it may have been unlocked already: they are reported all the same.
      why = "lock '" + name + "': " + e.what();
      if (!failed) failed = e.exit_code();
    }
    if (!why.empty()) refused.push_back(std::move(why));
  }
  if (!one)
    console.result({{"locks", each}});
  else if (!each.empty())
    console.result(each.front());
  if (refused.empty()) return 0;
  std::string line;
  for (const auto& r : refused) line += (line.empty() ? "" : "; ") + r;
  if (!unlocked.empty()) line += " (unlocked all the same: " + quoted_names(unlocked) + ")";
  throw Error(failed ? failed : kExitNotNow, line);
}

// unlock --force under --layout redisson --redisson-object permit-expirable-semaphore: every
// permit of each Redisson RPermitExpirableSemaphore freed, whoever (Java or rlock) took it,
// as `sem release --force` does.
int force_semaphores(const UnlockFlags& f, const Console& console, const Settings& settings) {
  if (settings.redisson_object == RedissonObject::kSemaphore)
    throw UsageError(
        "unlock is refused with --redisson-object semaphore: Redisson's RSemaphore has no "
        "holder to remove (its permits are anonymous); give permits back with rlock sem "
        "release NAME --count K");
  if (!f.force || f.shared)
    throw UsageError(
        "--redisson-object names a semaphore: unlock takes it only with --force (and no "
        "--shared); a permit is given back with rlock sem release NAME --permit ID");
  redis::Topology topology = open_topology(settings);
  Json each = Json::array();
  for (const auto& name : f.names) {
    prim::RedissonSemaphore sem(topology, name, settings.prefix);
    Json freed = Json::array();
    for (const auto& p : sem.force_release())
      freed.push_back({{"id", p.id}, {"lease_ms", p.lease_left.count()}});
    each.push_back({{"name", name}, {"forced", true}, {"permits", freed}});
  }
  console.result(f.names.size() == 1 ? each.front() : Json{{"locks", each}});
  return 0;
}

}  // namespace

Runner define_unlock_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto flags = std::make_shared<UnlockFlags>();
  auto* sub = &app;
  add_table_option(*sub, "name", flags->names)->required();
  auto* owner = add_table_option(*sub, "--owner", flags->owner);
  add_table_flag(*sub, "--shared", flags->shared);
  add_table_flag(*sub, "--force", flags->force)->excludes(owner);
  sub->footer(R"(Prints {"name","owner","released","count"}: released is true when the count
reached 0. By a non-holder it changes nothing, names the holder and exits 75.
--force prints {"name","forced":true,"holders"} with whoever held it, each holder's
{"owner","count"} and "note" where the hold had one (--note).
Several NAMEs: each is unlocked (or forced) on its own, and it prints {"locks":[...]} with
the object of each one unlocked; one not unlocked is named on stderr (75, or the exit
code of its error: 65 for a key of another type, 69 when its server did not answer).

Examples:
  rlock unlock deploy-prod --owner ci-42
  rlock unlock nightly-report --force      # on-call: clear a stuck lock)");
  return {[flags](const Settings& settings) {
    Console console(settings);
    validate_names(flags->names);
    if (settings.layout == Layout::kRedisson &&
        (settings.redisson_object == RedissonObject::kSemaphore ||
         settings.redisson_object == RedissonObject::kPermitExpirableSemaphore))
      return force_semaphores(*flags, console, settings);
    std::string owner = flags->force ? std::string() : explicit_owner(flags->owner, settings);
    return run_unlock(*flags, owner, console, settings);
  }};
}

}  // namespace rlock::cli
