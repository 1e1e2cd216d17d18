#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/lock_options.hpp"
#include "prim/lock.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

struct UnlockFlags {
  std::string name;
  std::string owner;
  bool force = false;
  bool shared = false;
};

int force_unlock(prim::Lock& lock, const Console& console) {
  auto holders = lock.force_release();
  console.result({{"name", lock.name()}, {"forced", true}, {"holders", holders_json(holders)}});
  return 0;
}

}  // namespace

Runner define_unlock_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto flags = std::make_shared<UnlockFlags>();
  auto* sub = &app;
  sub->add_option("name", flags->name, "lock name")->required()->type_name("NAME");
  auto* owner = sub->add_option("--owner", flags->owner, "the owner that holds it (or RLOCK_OWNER)")
                    ->type_name("ID");
  sub->add_flag("-s,--shared", flags->shared, "drop a shared (read) hold of the owner");
  sub->add_flag("--force", flags->force,
                "release it whoever holds it, writer and readers (for stuck locks)")
      ->excludes(owner);
  sub->footer(R"(Prints {"name","owner","released","count"}: released is true when the count
reached 0. By a non-holder it changes nothing, names the holder and exits 75.
--force prints {"name","forced":true,"holders"} with whoever held it.

Examples:
  rlock unlock deploy-prod --owner ci-42
  rlock unlock nightly-report --force      # on-call: clear a stuck lock)");
  return {[flags](const Settings& settings) {
    Console console(settings);
    validate_name(flags->name);
    std::string owner = flags->force ? std::string() : explicit_owner(flags->owner, settings);
    redis::Topology topology = open_topology(settings);
    auto layout = make_layout(settings);
    prim::Lock lock(topology, *layout, flags->name);
    if (flags->force) return force_unlock(lock, console);
    auto r = lock.release(owner, Millis(0), "",
                          flags->shared ? prim::LockMode::kShared : prim::LockMode::kExclusive);
    using Outcome = prim::Release::Outcome;
    if (r.outcome == Outcome::kExecRunning) {
      throw Error(kExitNotNow, "lock '" + flags->name + "' is held by a running `rlock exec` of " +
                                   owner +
                                   "; unlock cannot end that hold (stop the exec, or use --force)");
    }
    if (r.outcome == Outcome::kNotHeld && r.holders.empty()) {
      throw Error(kExitNotNow, "lock '" + flags->name + "' is not held; nothing to unlock");
    }
    if (r.outcome == Outcome::kNotHeld) {
      throw Error(kExitNotNow, "lock '" + flags->name + "' is held by " +
                                   describe_holders(r.holders) + ", not by " + owner +
                                   "; nothing changed (use --force to release it anyway)");
    }
    console.result({{"name", flags->name},
                    {"owner", owner},
                    {"released", r.remaining == 0},
                    {"count", r.remaining}});
    return 0;
  }};
}

}  // namespace rlock::cli
