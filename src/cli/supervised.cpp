#include "cli/supervised.hpp"

#include <CLI/CLI.hpp>

#include "cli/ancestry.hpp"
#include "cli/flag_options.hpp"
#include "cli/secret_env.hpp"
#include "exec/stop_policy.hpp"
#include "exec/watchdog.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

constexpr Millis kDefaultKillAfter{10'000};

// The job must be dead by the lease deadline minus a margin, and stopping starts
// --kill-after before that; an explicit --kill-after that leaves renewals no room is a
// usage error, the default is shortened to fit (see exec/stop_policy.hpp).
void set_stop_timing(const SuperviseFlags& f, Millis lease, const Console& console,
                     exec::SuperviseOptions& so) {
  so.margin = exec::stop_margin(lease);
  Millis fit = exec::max_kill_after(lease);
  if (f.kill_after_given && f.kill_after_given->count() > 0) {
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

exec::SuperviseOptions parsed_options(const SuperviseFlags& f, Millis lease,
                                      const Console& console) {
  exec::SuperviseOptions so;
  so.on_lost_signal = exec::parse_signal(f.on_lost.c_str());
  so.min_hold = parse_duration(f.min_hold, "--min-hold");
  set_stop_timing(f, lease, console, so);
  return so;
}

std::string join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

std::optional<exec::JobCgroup> job_cgroup(const Console& console) {
  std::string no_cgroup;
  auto cgroup = exec::JobCgroup::create(&no_cgroup);
  console.explain(
      cgroup ? "containing the job in cgroup " + cgroup->dir()
             : "containing the job by process group and subreaper (no cgroup: " + no_cgroup + ")");
  return cgroup;
}

// What run_unheld() supervises: a hold that is always there and never needs Redis, so the
// watchdog's renewals (due every kNoLease/3) and the release are no-ops.
class Unheld final : public prim::Hold {
 public:
  Unheld() : Hold(kNoLease, 0, SteadyClock::now() + kNoLease) {}
  Renewed renew() override { return Renewed::kHeld; }
  Released release(Millis) override { return Released::kReleased; }
  std::string lost_reason() const override { return "nothing was held"; }
};

}  // namespace

void add_supervise_flags(CLI::App& sub, SuperviseFlags& f) {
  add_table_option(sub, "--on-lost", f.on_lost);
  f.kill_after_given = add_table_option(sub, "--kill-after", f.kill_after);
  if (table_has(sub, "--min-hold")) add_table_option(sub, "--min-hold", f.min_hold);
  add_table_flag(sub, "--keep-secrets", f.keep_secrets);
}

// Signals are diverted first, so that INT/TERM/HUP/QUIT stop the wait instead of rlock.
Supervision::Supervision(const SuperviseFlags& flags, Millis lease, const Console& console)
    : console_(console),
      // Worked out now, off the path from the acquisition to the job's start.
      secret_names_(flags.keep_secrets ? std::vector<std::string>()
                                       : secret_variable_names(current_environment())),
      lease_(lease),
      options_(parsed_options(flags, lease, console)) {}

void Supervision::prepare_during_next_script(redis::Topology& topology) {
  topology.while_next_script_runs([this]() noexcept { prepare(); });
}

// Before the job can start, not before the hold is taken: an uncontended exec makes them
// while its acquisition is with the server (about 0.15 ms of its run here), a waiter before
// it waits, so that the guardian's start is never part of a hand-off.
void Supervision::prepare() noexcept {
  if (guardian_ || prepare_error_) return;  // done, or failed for good
  try {
    if (auto cgroup = job_cgroup(console_)) cgroup_.emplace(std::move(*cgroup));
    options_.cgroup = cgroup_ ? &*cgroup_ : nullptr;
    guardian_.emplace(exec::Guardian::start(options_.on_lost_signal, options_.kill_after,
                                            options_.margin, cgroup_ ? cgroup_->dir() : ""));
  } catch (...) {
    prepare_error_ = std::current_exception();
  }
}

int Supervision::stop_signal() { return stops_.stop_signal(); }

prim::WaitHooks Supervision::wait_hooks(prim::WaitHooks base) {
  // Any other wake-up of the signal fd (the SIGCHLD of a child rlock inherited:
  // `sh -c 'x & exec rlock ...'`) does not end the wait.
  return stops_.attach(std::move(base));
}

Millis Supervision::renew_interval() const {
  return exec::renew_interval(lease_, options_.kill_after + options_.margin);
}

int Supervision::run(const std::vector<std::string>& command,
                     std::vector<std::pair<std::string, std::string>> env,
                     std::unique_ptr<prim::Hold> hold, redis::Topology& topology) {
  prepare();
  if (prepare_error_) {  // no guardian: the job must not start, and the hold goes back
    try {
      hold->job_not_started();
      hold->release(Millis(0));
    } catch (const Error&) {  // it expires with its lease
    }
    std::rethrow_exception(prepare_error_);
  }
  exec::JobSpec job;
  job.argv = command;
  job.env = std::move(env);
  job.unset = secret_names_;  // a copy: a hold that came too late runs again
  job.signal_mask = &stops_.fd().original_mask();
  exec::Watchdog watchdog(std::move(hold), topology);
  options_.acquired_at = SteadyClock::now();
  options_.verbose = [this](const std::string& m) { console_.explain(m); };
  options_.warn = [this](const std::string& m) { console_.notice(m); };
  options_.started = [&topology] { topology.close_retired(); };
  options_.forwarded = [this](int s) { stops_.forwarded(s); };
  came_too_late_ = false;
  options_.wait_again = [this] {
    came_too_late_ = SteadyClock::now() < wait_again_until_;
    return came_too_late_;
  };
  int code = exec::supervise(job, watchdog, stops_.fd(), *guardian_, options_);
  if (came_too_late_) guardian_.reset();  // it was told to finish: the next run starts one
  return code;
}

int Supervision::run_held(const std::vector<std::string>& command, const JobHold& held,
                          std::unique_ptr<prim::Hold> hold, redis::Topology& topology) {
  console_.explain("acquired " + held.what + " (" + held.terms + "lease " +
                   format_duration(lease_) + ", renewed every " +
                   format_duration(renew_interval()) + "); running: " + join(command));
  std::vector<std::pair<std::string, std::string>> env = {{"RLOCK_NAME", held.name},
                                                          {"RLOCK_OWNER", held.owner}};
  env.insert(env.end(), held.env.begin(), held.env.end());
  env.emplace_back("RLOCK_LEASE_MS", std::to_string(lease_.count()));
  env.emplace_back(kHoldsVariable, held.holds);
  return run(command, std::move(env), std::move(hold), topology);
}

int Supervision::run_unheld(const std::vector<std::string>& command,
                            std::vector<std::pair<std::string, std::string>> env,
                            redis::Topology& topology) {
  return run(command, std::move(env), std::make_unique<Unheld>(), topology);
}

}  // namespace rlock::cli
