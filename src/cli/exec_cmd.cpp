#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/lock_options.hpp"
#include "cli/secret_env.hpp"
#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "exec/supervisor.hpp"
#include "exec/watchdog.hpp"
#include "prim/lock.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

struct ExecFlags {
  LockFlags lock;
  std::string on_lost = "TERM";
  std::string kill_after = "10s";
  std::string min_hold = "0";
  bool keep_secrets = false;
};

std::string join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Drains the pending signals; returns the last of INT/TERM/HUP/QUIT among them, or 0.
int take_stop_signal(exec::SignalFd& signals) {
  int signo = 0;
  while (auto s = signals.next()) {
    if (exec::is_forwarded(*s)) signo = *s;
  }
  return signo;
}

int run_exec(const ExecFlags& f, const std::vector<std::string>& command,
             const Settings& settings) {
  Console console(settings);
  LockRequest req = resolve_lock_request(f.lock, settings);
  exec::SuperviseOptions so;
  so.on_lost_signal = exec::parse_signal(f.on_lost.c_str());
  so.kill_after = parse_duration(f.kill_after, "--kill-after");
  so.min_hold = parse_duration(f.min_hold, "--min-hold");

  exec::SignalFd signals;  // from here on, INT/TERM/HUP/QUIT stop the wait instead of rlock
  // Forked now, not after acquisition, so that its fork is not part of the handoff.
  auto guardian = exec::Guardian::start(so.on_lost_signal, so.kill_after);
  redis::Topology topology(settings.connect);
  prim::KeyLayout layout(settings.prefix);
  prim::Lock lock(topology, layout, req.name);
  // Only INT, TERM, HUP and QUIT end the wait; any other wake-up of the signal fd (the
  // SIGCHLD of a child rlock inherited: `sh -c 'x & exec rlock ...'`) does not.
  int stop_signal = 0;
  auto hooks = wait_hooks(console, req.name);
  hooks.interrupt_fd = signals.fd();
  hooks.should_stop = [&] {
    stop_signal = take_stop_signal(signals);
    return stop_signal != 0;
  };
  auto a = lock.acquire(req.owner, req.lease, req.wait_until, hooks, prim::HoldKind::kExec);
  if (!stop_signal)
    stop_signal = take_stop_signal(signals);  // came while connecting, or at the grant
  if (stop_signal) {
    if (const auto* held = std::get_if<prim::Held>(&a))
      lock.release(req.owner, Millis(0), held->hold_id);
    console.notice("interrupted by signal " + std::to_string(stop_signal) +
                   " while waiting for lock '" + req.name + "'; the command did not run");
    return 128 + stop_signal;
  }
  if (const auto* busy = std::get_if<prim::Busy>(&a)) {
    console.notice(describe_busy(req.name, *busy) + "; not running the command");
    return req.conflict_exit_code;
  }
  const auto& held = std::get<prim::Held>(a);
  console.explain("acquired lock '" + req.name + "' (fence " + std::to_string(held.fence) +
                  ", lease " + format_duration(req.lease) + ", renewed every " +
                  format_duration(req.lease / 3) + "); running: " + join(command));

  exec::JobSpec job;
  job.argv = command;
  job.env = {{"RLOCK_NAME", req.name},
             {"RLOCK_OWNER", req.owner},
             {"RLOCK_FENCE", std::to_string(held.fence)},
             {"RLOCK_LEASE_MS", std::to_string(req.lease.count())}};
  job.signal_mask = &signals.original_mask();
  if (!f.keep_secrets) job.unset = secret_variable_names(current_environment());
  exec::Watchdog watchdog(lock.hold(req.owner, req.lease, held), topology);
  so.acquired_at = SteadyClock::now();
  so.verbose = [&console](const std::string& m) { console.explain(m); };
  so.warn = [&console](const std::string& m) { console.notice(m); };
  return exec::supervise(job, watchdog, signals, guardian, so);
}

}  // namespace

Runner define_exec_command(CLI::App& app, std::vector<std::string>& command) {
  auto flags = std::make_shared<ExecFlags>();
  auto* sub = &app;
  add_lock_flags(*sub, flags->lock);
  sub->get_option("name")->description("lock name; then -- CMD [ARGS...], the command to run");
  sub->add_option("--on-lost", flags->on_lost,
                  "signal for the job if the lock is lost (default TERM)")
      ->type_name("SIG");
  sub->add_option("--kill-after", flags->kill_after, "then SIGKILL after DUR (default 10s)")
      ->type_name("DUR");
  sub->add_option("--min-hold", flags->min_hold, "keep the lock until DUR after acquisition")
      ->type_name("DUR");
  sub->add_flag("--keep-secrets", flags->keep_secrets,
                "let the job inherit RLOCK_PASSWORD and a password-bearing RLOCK_URL/REDIS_URL");
  sub->footer(R"(Runs CMD (no shell) in its own process group while holding NAME, renewing the lease
every lease/3, and exits with CMD's status (128+N if killed by signal N, 127 not found,
126 not executable). Busy: exits 75 (or -E) without running CMD. If the lock is lost,
the job gets --on-lost, then KILL after --kill-after, and rlock exits 76. The job sees
RLOCK_NAME, RLOCK_OWNER, RLOCK_FENCE and RLOCK_LEASE_MS, but not RLOCK_PASSWORD nor a
RLOCK_URL/REDIS_URL holding a password (a job that runs rlock uses --password-file, or
exec --keep-secrets).

Examples:
  rlock exec nightly-report -- ./report.sh                # crontab: skip if running
  rlock exec --wait 20m deploy-prod -- ./deploy.sh        # CI: queue behind the deploy
  rlock exec --min-hold 50s tick -- ./every-minute.sh     # once per minute across hosts
  rlock exec db-migrate -- sh -c 'migrate --fence "$RLOCK_FENCE"')");
  return {
      [flags, &command](const Settings& settings) { return run_exec(*flags, command, settings); }};
}

}  // namespace rlock::cli
