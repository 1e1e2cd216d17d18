#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/lock_options.hpp"
#include "exec/cgroup.hpp"
#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "exec/stop_policy.hpp"
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
  std::string kill_after;  // empty: the default, clamped to fit the lease
  std::string min_hold = "0";
};

constexpr Millis kDefaultKillAfter{10'000};

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

// The job must be dead by the lease deadline minus a margin, and stopping starts
// --kill-after before that; an explicit --kill-after that leaves renewals no room is a
// usage error, the default is shortened to fit (see exec/stop_policy.hpp).
void set_stop_timing(const ExecFlags& f, Millis lease, const Console& console,
                     exec::SuperviseOptions& so) {
  so.margin = exec::stop_margin(lease);
  Millis fit = exec::max_kill_after(lease);
  if (!f.kill_after.empty()) {
    so.kill_after = parse_duration(f.kill_after, "--kill-after");
    if (so.kill_after > fit) {
      throw UsageError("--kill-after " + format_duration(so.kill_after) + " does not fit --lease " +
                       format_duration(lease) + ": at most " + format_duration(fit) +
                       " (2/3 of the lease minus twice the " + format_duration(so.margin) +
                       " margin), or use a longer --lease");
    }
    return;
  }
  so.kill_after = std::min(kDefaultKillAfter, fit);
  if (so.kill_after < kDefaultKillAfter) {
    console.explain("--kill-after defaults to " + format_duration(kDefaultKillAfter) + "; using " +
                    format_duration(so.kill_after) + " to fit the " + format_duration(lease) +
                    " lease");
  }
}

int run_exec(const ExecFlags& f, const std::vector<std::string>& command,
             const Settings& settings) {
  Console console(settings);
  LockRequest req = resolve_lock_request(f.lock, settings);
  exec::SuperviseOptions so;
  so.on_lost_signal = exec::parse_signal(f.on_lost.c_str());
  so.min_hold = parse_duration(f.min_hold, "--min-hold");
  set_stop_timing(f, req.lease, console, so);

  exec::SignalFd signals;  // from here on, INT/TERM/HUP/QUIT stop the wait instead of rlock
  std::string no_cgroup;
  auto cgroup = exec::JobCgroup::create(&no_cgroup);
  console.explain(
      cgroup ? "containing the job in cgroup " + cgroup->dir()
             : "containing the job by process group and subreaper (no cgroup: " + no_cgroup + ")");
  so.cgroup = cgroup ? &*cgroup : nullptr;
  // Started now, not after acquisition, so that its start is not part of the handoff.
  auto guardian = exec::Guardian::start(so.on_lost_signal, so.kill_after, so.margin,
                                        cgroup ? cgroup->dir() : "");
  auto conn = redis::Connection::open(settings.connect);
  prim::KeyLayout layout(settings.prefix);
  prim::Lock lock(conn, layout, req.name);
  auto a = lock.acquire(req.owner, req.lease, req.wait_until,
                        wait_hooks(console, req.name, signals.fd()));
  // A signal that came while connecting or waiting stops everything, even if the lock was
  // just taken; SIGCHLD of a child rlock inherited (`sh -c 'x & exec rlock ...'`) does not.
  while (true) {
    if (int signo = take_stop_signal(signals)) {
      if (a.acquired) lock.release(req.owner);
      console.notice("interrupted by signal " + std::to_string(signo) +
                     " while waiting for lock '" + req.name + "'; the command did not run");
      return 128 + signo;
    }
    if (!a.interrupted) break;
    a = lock.acquire(req.owner, req.lease, req.wait_until,
                     wait_hooks(console, req.name, signals.fd()));
  }
  if (!a.acquired) {
    console.notice("lock '" + req.name + "' is held by " + describe_holders(a.holders) +
                   (a.ttl.count() >= 0 ? ", lease " + format_duration(a.ttl) + " left" : "") +
                   "; not running the command");
    return req.conflict_exit_code;
  }
  console.explain("acquired lock '" + req.name + "' (fence " + std::to_string(a.fence) +
                  ", lease " + format_duration(req.lease) + ", renewed every " +
                  format_duration(exec::renew_interval(req.lease, so.kill_after + so.margin)) +
                  "); running: " + join(command));

  exec::JobSpec job;
  job.argv = command;
  job.env = {{"RLOCK_NAME", req.name},
             {"RLOCK_OWNER", req.owner},
             {"RLOCK_FENCE", std::to_string(a.fence)},
             {"RLOCK_LEASE_MS", std::to_string(req.lease.count())}};
  job.signal_mask = &signals.original_mask();
  exec::Watchdog watchdog(std::move(conn), layout, req.name, req.owner, req.lease, a.sent_at);
  so.acquired_at = a.known_at;
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
  sub->add_option("--kill-after", flags->kill_after,
                  "then SIGKILL after DUR (default 10s, shortened to fit --lease)")
      ->type_name("DUR");
  sub->add_option("--min-hold", flags->min_hold, "keep the lock until DUR after acquisition")
      ->type_name("DUR");
  sub->footer(R"(Runs CMD (no shell) in its own process group while holding NAME, renewing the lease
every lease/3, and exits with CMD's status (128+N if killed by signal N, 127 not found,
126 not executable). Busy: exits 75 (or -E) without running CMD. If the lock is lost,
or no renewal succeeds by lease deadline - kill-after - margin, the job gets --on-lost,
then KILL, dead before the lease can expire, and rlock exits 76. The job sees
RLOCK_NAME, RLOCK_OWNER, RLOCK_FENCE and RLOCK_LEASE_MS.

Examples:
  rlock exec nightly-report -- ./report.sh                # crontab: skip if running
  rlock exec --wait 20m deploy-prod -- ./deploy.sh        # CI: queue behind the deploy
  rlock exec --min-hold 50s tick -- ./every-minute.sh     # once per minute across hosts
  rlock exec db-migrate -- sh -c 'migrate --fence "$RLOCK_FENCE"')");
  return {
      [flags, &command](const Settings& settings) { return run_exec(*flags, command, settings); }};
}

}  // namespace rlock::cli
