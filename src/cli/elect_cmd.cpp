// `rlock elect NAME -- CMD`: leader election as etcdctl elect and Kubernetes leader election
// offer it, built on what a lock already is. A campaign is an exec that waits forever in the
// lock's FIFO queue: the leader runs CMD under exec's supervision (renewals, fencing, the
// job stopped before its lease can pass to the next candidate), and its end (CMD's exit, a
// signal, the lease lost) ends the leadership and hands the lock to the longest-waiting
// candidate. `elect --observe NAME` follows who leads.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/elect_observe.hpp"
#include "cli/exec_run.hpp"
#include "cli/flag_options.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

struct ElectFlags {
  ExecFlags exec;
  bool observe = false;
};

int run_elect(ElectFlags f, std::vector<std::string> command, const Settings& settings) {
  if (f.exec.lock.names.size() != 1) throw UsageError("elect: one NAME, the election's");
  if (f.observe) {
    if (!command.empty() || f.exec.shell_command) {
      throw UsageError("elect --observe only watches who leads: it runs no command");
    }
    validate_name(f.exec.lock.names.front());
    Console console(settings);
    redis::Topology topology = open_topology(settings);
    auto layout = make_layout(settings);
    return run_elect_observe(f.exec.lock.names.front(), topology, *layout, console);
  }
  if (command.empty() && !f.exec.shell_command) {
    throw UsageError(
        "elect: missing '--' before the command to run while leading (rlock elect [OPTIONS] "
        "NAME -- CMD [ARGS...]; rlock elect --observe NAME to watch)");
  }
  f.exec.lock.wait = "inf";  // a campaign lasts until it leads, or until INT/TERM
  return run_exec(f.exec, std::move(command), settings);
}

}  // namespace

Runner define_elect_command(CLI::App& app, std::vector<std::string>& command) {
  auto flags = std::make_shared<ElectFlags>();
  // Several names are refused by run_elect: CLI11's own count check would come before an
  // unknown option's, and name the option's value as a second NAME.
  add_lock_flags(app, flags->exec.lock, Names::kSeveral);
  add_supervise_flags(app, flags->exec.supervise);
  add_table_option(app, "--command", flags->exec.shell_command);
  add_table_flag(app, "--observe", flags->observe);
  app.footer(R"footer(Campaigns for NAME until it leads, then runs CMD as exec does (renewed lease,
fencing token in RLOCK_FENCE, the job stopped with --on-lost then KILL before the lease
can pass on; exit status CMD's, 76 if leadership was lost). Candidates queue in arrival
order; when the leader's CMD ends, its rlock dies or its lease runs out, the longest-waiting
candidate leads. INT/TERM while campaigning: exit 128+N, nothing held. The lock is an
ordinary exclusive lock: rlock inspect shows the leader and the candidates (waiters).

--observe prints {"name","leader":{"owner","note","fence","since"}} (or "leader":null)
now and at every change, until INT or TERM (exit 0), never polling.

--note TEXT is the candidate's value (etcd's proposal): inspect and --observe show the
leader's.

Examples:
  rlock elect --lease 10s --note "$(hostname)" scheduler -- ./scheduler  # one runs
  rlock elect --observe scheduler                       # who leads, as JSON lines)footer");
  return {
      [flags, &command](const Settings& settings) { return run_elect(*flags, command, settings); }};
}

}  // namespace rlock::cli
