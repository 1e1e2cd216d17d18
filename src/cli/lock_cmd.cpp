#include <CLI/CLI.hpp>
#include <memory>

#include "cli/ancestry.hpp"
#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/lock_options.hpp"
#include "prim/lock.hpp"
#include "util/duration.hpp"

namespace rlock::cli {
namespace {

std::string unlock_command(const LockRequest& req) {
  return std::string("rlock unlock ") + (req.mode == prim::LockMode::kShared ? "-s " : "") +
         shell_quote(req.name) + " --owner " + shell_quote(req.owner);
}

// What stands when the result could not be printed: the hold, and how to give it back.
std::string held_line(const LockRequest& req, const prim::Held& held) {
  return "lock '" + req.name + "' is held all the same (" +
         (req.mode == prim::LockMode::kShared ? "shared, " : "") + "owner '" + req.owner +
         "', count " + std::to_string(held.count) + ", fence " + std::to_string(held.fence) +
         ", lease " + format_duration(held.lease) + "); give it back with: " + unlock_command(req);
}

// `lock` without an owner holds for a made-up one that only this line (and stdout, which
// -q hides) tells: said on stderr even with -q, with the command that releases it.
std::string made_up_owner_warning(const LockRequest& req) {
  return "no --owner or RLOCK_OWNER: holding lock '" + req.name + "' as owner '" + req.owner +
         "'; release it with: " + unlock_command(req);
}

}  // namespace

Runner define_lock_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto flags = std::make_shared<LockFlags>();
  auto* sub = &app;
  add_lock_flags(*sub, *flags);
  sub->footer(R"(Prints {"name","owner","acquired":true,"count","fence","lease_ms"}; when the lock
is held by someone else prints {"name","acquired":false,"holders","holders_total","ttl_ms"}
and exits 75 (or -E); "holders" lists the writer and at most 100 readers. With
--sync-replicas N the result also has "replicas_acked" (how many acknowledged the hold).
The same owner again re-enters (count + 1); a re-entry never shortens the lease in force.

Examples:
  rlock lock deploy-prod --owner ci-42 --lease 10m     # hold for 10 minutes
  rlock lock deploy-prod --owner ci-42 --lease 10m     # same owner again: re-enter, extend
  rlock lock backup --wait 30s                          # wait up to 30s for it
  rlock lock -s reports --owner reader-1                # a shared (read) hold
  rlock unlock deploy-prod --owner ci-42

Without --owner (or RLOCK_OWNER) the owner is made up (host:pid:random) and a warning on
stderr, even with -q, says how to unlock it.)");
  return {[flags](const Settings& settings) {
    Console console(settings);
    LockRequest req = resolve_lock_request(*flags, settings);
    redis::Topology topology = open_topology(settings);
    auto layout = make_layout(settings);
    prim::Lock lock(topology, *layout, req.name);
    lock.set_ancestry(inherited_holds());
    auto a = lock.acquire(req.owner, req.lease, req.wait_until, wait_hooks(console, req.name),
                          prim::HoldKind::kLock, req.mode);
    if (const auto* busy = std::get_if<prim::Busy>(&a)) {
      if (req.wait.count() > 0) console.notice(describe_busy(req.name, *busy, req.wait));
      console.result({{"name", req.name},
                      {"acquired", false},
                      {"holders", holders_json(busy->holders)},
                      {"holders_total", busy->holders_total},
                      {"ttl_ms", busy->ttl.count()}});
      return req.conflict_exit_code;
    }
    const auto& held = std::get<prim::Held>(a);
    if (req.owner_made_up) console.warning(made_up_owner_warning(req));
    Json out = {{"name", req.name},    {"owner", req.owner},  {"acquired", true},
                {"count", held.count}, {"fence", held.fence}, {"lease_ms", held.lease.count()}};
    if (req.mode == prim::LockMode::kShared) out["shared"] = true;
    if (held.replicas_acked >= 0) out["replicas_acked"] = held.replicas_acked;
    console.result(out, held_line(req, held));
    return 0;
  }};
}

}  // namespace rlock::cli
