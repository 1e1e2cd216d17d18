#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/ancestry.hpp"
#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/exec_run.hpp"
#include "cli/flag_options.hpp"
#include "cli/lock_options.hpp"
#include "cli/lock_set.hpp"
#include "cli/once_per.hpp"
#include "cli/redisson_lock.hpp"
#include "cli/supervised.hpp"
#include "prim/multi_lock.hpp"
#include "prim/run_history.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/owner.hpp"

namespace rlock::cli {
namespace {

// An exec --once-per run: the slot's record, whose end the release writes (or `trace` tells).
struct SlotRun {
  prim::RunHistory& history;
  std::string id;
  prim::RunTrace trace;
};

// flock -c runs CMD with $SHELL -c (/bin/sh when SHELL is unset or empty); so does exec -c.
std::vector<std::string> shell_argv(const std::string& command) {
  const char* shell = std::getenv("SHELL");
  return {shell && *shell ? shell : "/bin/sh", "-c", command};
}

// RLOCK_FENCES: one line NAME=FENCE per lock, in the order given (names have no control
// characters, and a fence no '=').
std::string fences_variable(const std::vector<prim::MultiLock::Taken>& taken) {
  std::string out;
  for (const auto& t : taken)
    out += (out.empty() ? "" : "\n") + t.name + "=" + std::to_string(t.held.fence);
  return out;
}

// RLOCK_NAMES: the names taken, comma-separated, as Jenkins' lockable resources give them
// (RLOCK_FENCES has them one a line, for names with a comma).
std::string names_variable(const std::vector<prim::MultiLock::Taken>& taken) {
  std::string out;
  for (const auto& t : taken) out += (out.empty() ? "" : ",") + t.name;
  return out;
}

// RLOCK_NAME and RLOCK_FENCE are the first name's (a pool's: the member taken); -v gives
// each lock's fence.
JobHold job_hold(const LockRequest& req, const std::vector<prim::MultiLock::Taken>& taken,
                 const std::vector<prim::AncestorHold>& inherited) {
  JobHold job;
  job.name = taken.front().name;
  job.owner = req.owner;
  const std::string first_fence = std::to_string(taken.front().held.fence);
  if (taken.size() == 1) {
    job.what = "lock '" + job.name + "'";
    job.terms = "fence " + first_fence + ", ";
  }
  std::vector<prim::AncestorHold> own;
  for (const auto& t : taken) {
    if (taken.size() > 1)
      job.what += (job.what.empty() ? "locks '" : ", '") + t.name + "' (fence " +
                  std::to_string(t.held.fence) + ")";
    own.push_back({t.held.hold_id, req.owner});
  }
  job.env = {{"RLOCK_FENCE", first_fence}, {"RLOCK_FENCES", fences_variable(taken)}};
  if (req.pool) job.env.push_back({"RLOCK_NAMES", names_variable(taken)});
  job.holds = holds_for_job_several(inherited, own);
  return job;
}

// One wait for the locks (all of them or none, see prim::MultiLock: one name is the case
// n=1) and, once they are held, the command run under them.
int acquire_and_run(const std::vector<std::string>& command, const LockRequest& req,
                    const Console& console, Supervision& supervision, redis::Topology& topology,
                    LockSet& locks, SlotRun* run) {
  auto inherited = inherited_holds();
  locks.set_ancestry(inherited);
  auto outcome = locks.acquire(
      req,
      [&](const std::string& name) { return supervision.wait_hooks(wait_hooks(console, name)); },
      prim::HoldKind::kExec);
  const auto* refused = std::get_if<prim::MultiLock::Refused>(&outcome);
  // With several names, the line must tell that the busy or interrupted one left none held.
  const std::string none_held =
      req.names.size() > 1 ? "; none of " + locks_named(req.names) + " is held" : "";
  const int signo = supervision.stop_signal();  // while connecting, waiting, or at the grant
  if (run && signo) {
    run->trace.interrupted = true;
  } else if (run && refused) {
    run->trace.not_started = true;
  }
  if (signo) {
    if (!refused)
      locks.give_back(req.owner, std::get<prim::MultiLock::Acquired>(outcome).taken,
                      prim::HoldKind::kExec);
    const std::string waited_for =
        refused && !req.pool ? "lock '" + refused->name + "'" : locks.named();
    console.notice("interrupted by signal " + std::to_string(signo) + " while waiting for " +
                   waited_for + none_held + "; the command did not run");
    return 128 + signo;
  }
  if (refused && !refused->busy.superseded_by.empty()) {
    console.notice(describe_superseded(refused->name, refused->busy) + "; not running the command");
    return kExitSuperseded;
  }
  if (refused) {
    console.notice(locks.describe_refused(*refused, req.wait) +
                   (run ? "; this slot's run is skipped" : "") + "; not running the command");
    return req.conflict_exit_code;
  }
  auto& all = std::get<prim::MultiLock::Acquired>(outcome);
  if (run) all.hold = std::make_unique<prim::RunHold>(std::move(all.hold), run->trace);
  return supervision.run_held(command, job_hold(req, all.taken, inherited), std::move(all.hold),
                              topology);
}

// acquire_and_run() in a slot claimed first: a slot another host claimed is busy at once;
// the run's end is recorded by its release, or here when no release did.
int run_in_slot(const OncePer& once, const std::vector<std::string>& command,
                const LockRequest& req, const Console& console, Supervision& supervision,
                redis::Topology& topology, LockSet& locks, const prim::KeyLayout& layout) {
  refuse_once_per_on_quorum(topology);
  prim::RunHistory history(topology, layout, req.name);
  SlotRun run{history, random_hex(8), {}};
  auto claim =
      history.claim(run.id, once.every, once.offset, layout.owner_field(req.owner), host_name());
  if (!claim.claimed) {
    console.notice(describe_taken_slot(req.name, once.every_text, claim.slot_start_ms,
                                       claim.slot_end_ms, claim.taken_by) +
                   "; not running the command");
    return req.conflict_exit_code;
  }
  locks.set_run(run.id);
  int code = 0;
  try {
    code = supervision.until_in_time(req.wait_until, [&] {
      return acquire_and_run(command, req, console, supervision, topology, locks, &run);
    });
  } catch (...) {  // no job started: the slot is given back (nothing changed, if nothing else)
    history.finish(run.id, "unclaimed", -1);
    throw;
  }
  const std::string end = prim::unrecorded_end(run.trace);
  if (!end.empty()) history.finish(run.id, end, end == "exited" ? run.trace.exit_code : -1);
  return code;
}

}  // namespace

int run_exec(const ExecFlags& f, std::vector<std::string> command, const Settings& settings) {
  if (f.shell_command) {
    if (!command.empty()) {
      throw UsageError(
          "exec: give the command either as -c 'CMD' (run by the shell) or after "
          "'--', not both");
    }
    if (f.shell_command->empty()) throw UsageError("exec: -c needs a command");
    command = shell_argv(*f.shell_command);
  }
  Console console(settings);
  LockRequest req = resolve_lock_request(f.lock, settings);
  const std::optional<OncePer> once = resolve_once_per(f.once_per, req, settings);
  if (req.mode == prim::LockMode::kShared && f.supervise.min_hold != "0") {
    throw UsageError(
        "--min-hold keeps a lock busy for everyone after the command; it has no meaning with "
        "--shared");
  }
  Supervision supervision(f.supervise, req.lease, console);
  redis::Topology topology = open_topology(settings);
  auto layout = make_layout(settings);
  select_redisson_lock(*layout, settings, req.mode == prim::LockMode::kShared, "exec", &req);
  if (layout->read_write_lock() && (f.supervise.min_hold != "0" || once)) {
    throw UsageError(
        "exec: --min-hold and --once-per have no form in Redisson's read-write lock; leave "
        "them out under --redisson-object read-write-lock");
  }
  supervision.prepare_during_next_script(topology);
  LockSet locks(topology, *layout, req);
  locks.configure(req);
  if (once) return run_in_slot(*once, command, req, console, supervision, topology, locks, *layout);
  return supervision.until_in_time(req.wait_until, [&] {
    return acquire_and_run(command, req, console, supervision, topology, locks, nullptr);
  });
}

Runner define_exec_command(CLI::App& app, std::vector<std::string>& command) {
  auto flags = std::make_shared<ExecFlags>();
  auto* sub = &app;
  add_lock_flags(*sub, flags->lock, Names::kSeveral);
  add_supervise_flags(*sub, flags->supervise);
  add_table_option(*sub, "--command", flags->shell_command);
  add_once_per_flags(*sub, flags->once_per);
  sub->footer(R"(Runs CMD (no shell; -c 'CMD' runs it with $SHELL -c, as flock -c) in its own
process group while holding NAME, renewing the lease
every lease/3, and exits with CMD's status (128+N if killed by signal N, 127 not found,
126 not executable). Busy: exits 75 (or -E) without running CMD. If the lock is lost,
or no renewal succeeds by lease deadline - kill-after - margin, the job gets --on-lost,
then KILL, dead before the lease can expire, and rlock exits 76. Two execs never run at
once on one lock, whatever their owner, unless both are --shared. The job sees RLOCK_NAME,
RLOCK_OWNER, RLOCK_FENCE, RLOCK_LEASE_MS and RLOCK_HOLDS, but not RLOCK_PASSWORD nor a
RLOCK_URL/REDIS_URL holding a password (a job that runs rlock uses --password-file, or
exec --keep-secrets). A request inside the job that only the release of the job's own hold
could grant (rlock exec --shared L -- rlock exec --wait inf L) would wait for itself: it is
refused at once, exit 65. --supersede: a newer --supersede waiter makes this queued one
exit 79 (--cancel-running: also stops the running --supersede job). A NAME that starts with '-' goes after a -- of its own:
rlock exec -- -NAME -- CMD.

Several NAMEs: CMD runs holding all of them, or not at all. They are taken one at a time
in sorted (bytewise) order, the earlier ones kept and renewed while a later one is waited
for, so jobs naming them in any order never deadlock, and each lock's queue serves
waiters in arrival order. Busy, a signal or an error: nothing stays held, and one line
says which lock was busy. RLOCK_NAME and RLOCK_FENCE are the first name's; RLOCK_FENCES
has a line NAME=FENCE per name (one name too). Losing any lock stops the job (76).

--one-of: the NAMEs are a pool, and CMD runs holding whichever is free first (--count K:
K of them, taken in sorted order). Pool waiters queue on every member, served in arrival
order; a member held directly is busy for the pool. RLOCK_NAME is the member taken,
RLOCK_NAMES the members taken (comma-separated), RLOCK_FENCE its fence.

Examples:
  rlock exec nightly-report -- ./report.sh                # crontab: skip if running
  rlock exec --wait 20m deploy-prod -- ./deploy.sh        # CI: queue behind the deploy
  rlock exec --min-hold 50s tick -- ./every-minute.sh     # once per minute across hosts
  rlock exec --once-per 1d --slot-offset 2h nightly -- ./report.sh  # once a day from 02:00 UTC
  rlock exec -s --wait 5m reports-db -- ./read-report.sh  # readers together, writers alone
  rlock exec --wait 30m staging-db deploy-slot -- ./deploy.sh  # both, or wait for both
  rlock exec --wait 1h --one-of stg-1 stg-2 stg-3 -- sh -c './test.sh "$RLOCK_NAME"'
  rlock exec db-migrate -- sh -c 'migrate --fence "$RLOCK_FENCE"')");
  return {
      [flags, &command](const Settings& settings) { return run_exec(*flags, command, settings); }};
}

}  // namespace rlock::cli
