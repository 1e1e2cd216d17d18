#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "cli/lock_options.hpp"
#include "cli/stop_signals.hpp"
#include "cli/wait_line.hpp"
#include "cli/whole_flag.hpp"
#include "prim/latch.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

// `latch status` lists about this many ids per call by default (--limit), at most kMaxStatusLimit.
constexpr long long kDefaultStatusLimit = 1000;
constexpr long long kMaxStatusLimit = 10'000;

struct LatchFlags {
  std::string name;
  std::string count;  // set N
  std::string expire;
  bool force = false;
  std::string by = "1";
  std::optional<std::string> id;
  std::string wait;
  bool no_wait = false;
  int conflict_exit_code = kExitNotNow;
  std::string limit = std::to_string(kDefaultStatusLimit);  // status: ids per page
  std::string after;                                        // status: the "next" of the page before
};

// A whole number in [1, kMaxLatchCount]; `what` names it in the error.
long long parse_count(const std::string& text, const std::string& what) {
  return parse_whole_flag(text, what, 1, prim::kMaxLatchCount);
}

// What every latch subcommand talks through, for latch `name`.
// The layout is made, and the name checked against it, before any connection.
struct Context {
  Context(const Settings& s, const std::string& name)
      : console(s),
        layout(checked_layout(s, name)),
        topology(open_topology(s)),
        latch(topology, *layout, name) {}
  static std::unique_ptr<prim::KeyLayout> checked_layout(const Settings& s,
                                                         const std::string& name) {
    auto layout = make_layout(s);
    layout->check_name(name);
    return layout;
  }
  Console console;
  std::unique_ptr<prim::KeyLayout> layout;
  redis::Topology topology;
  prim::Latch latch;
};

bool redisson(const Settings& s) { return s.layout == Layout::kRedisson; }

int run_set(const LatchFlags& f, const Settings& s) {
  validate_name(f.name);
  long long n = parse_count(f.count, "N");
  Millis expire = f.expire.empty() ? Millis(0) : parse_duration(f.expire, "--expire");
  if (!f.expire.empty() && expire.count() < 1) throw UsageError("--expire must be at least 1ms");
  if (!f.expire.empty() && redisson(s)) {
    throw UsageError(
        "latch set --expire is not available under --layout redisson: Redisson's waiters wake "
        "only on the \"0\" a count-down to zero sends, and an expiring count sends none");
  }
  Context c(s, f.name);
  auto r = c.latch.set(n, expire, f.force);
  if (!r.set) {
    throw Error(kExitNotNow, "latch '" + f.name + "' is live with count " +
                                 std::to_string(r.count) +
                                 "; nothing changed (use --force to reset it)");
  }
  Json out = {{"name", f.name},
              {"count", r.count},
              {"ttl_ms", expire.count() > 0 ? expire.count() : -1},
              {"previous", r.previous ? Json(*r.previous) : Json(nullptr)}};
  if (r.replicas_acked >= 0) out["replicas_acked"] = r.replicas_acked;
  c.console.result(out);
  return 0;
}

int run_count_down(const LatchFlags& f, const Settings& s) {
  validate_name(f.name);
  long long by = parse_count(f.by, "--by");
  if (f.id) validate_participant_id(*f.id);
  if (f.id && redisson(s)) {
    throw UsageError(
        "latch count-down --id is not available under --layout redisson: Redisson's latch is "
        "one integer that a Java trySetCount may start anew at any time, so no id can be tied "
        "to its round");
  }
  Context c(s, f.name);
  auto r = c.latch.count_down(by, f.id.value_or(""));
  using Outcome = prim::LatchCountDown::Outcome;
  if (r.outcome == Outcome::kMissing) {
    throw Error(kExitNotNow, "latch '" + f.name + "' does not exist (never set, or " +
                                 (redisson(s) ? "reached zero: Redisson deletes it then"
                                              : std::string("expired")) +
                                 "); nothing counted down");
  }
  Json out = {{"name", f.name},
              {"count", r.count},
              {"applied", r.applied},
              {"reached", r.reached},
              {"id", f.id ? Json(*f.id) : Json(nullptr)},
              {"repeated", r.outcome == Outcome::kRepeated}};
  if (r.replicas_acked >= 0) out["replicas_acked"] = r.replicas_acked;
  c.console.result(out);
  return 0;
}

int run_await(const LatchFlags& f, const Settings& s) {
  validate_name(f.name);
  Millis wait =
      f.wait.empty() ? Millis(0) : parse_duration(f.wait, "--wait", /*allow_forever=*/true);
  Deadline until = SteadyClock::now() + wait;
  Context c(s, f.name);
  prim::WaitHooks hooks;
  if (c.console.verbose()) {
    hooks.on_wait = [&](const prim::Waitable::Step& step, Millis left) {
      c.console.explain("waiting for latch '" + f.name + "' (" + step.holders +
                        ") to reach 0; giving up in " + format_duration(left));
    };
    hooks.on_reconnect = [&](const std::string& why) {
      c.console.explain("reconnecting to keep waiting: " + why);
    };
  }
  hooks = WaitLine::attach(WaitLine::on_terminal(s.quiet, "latch '" + f.name + "'"), hooks);
  // As `lock`: only a wait takes the stop signals.
  std::optional<StopSignals> stops;
  if (wait.count() > 0) {
    stops.emplace();
    hooks = stops->attach(std::move(hooks));
  }
  bool reached = c.latch.await(until, hooks);
  // Reached is what happened, even with a signal at that moment: nothing is held to undo.
  if (int signo = stops && !reached ? stops->stop_signal() : 0) {
    c.console.notice("interrupted by signal " + std::to_string(signo) +
                     " while waiting for latch '" + f.name + "'");
    return 128 + signo;
  }
  if (reached) {
    c.console.result({{"name", f.name}, {"reached", true}});
    return 0;
  }
  prim::LatchState st = c.latch.read(false);
  c.console.result({{"name", f.name},
                    {"reached", false},
                    {"exists", st.exists},
                    {"count", st.exists ? Json(st.count) : Json(nullptr)}});
  return f.conflict_exit_code;
}

int run_status(const LatchFlags& f, const Settings& s) {
  validate_name(f.name);
  const long long limit = parse_whole_flag(f.limit, "--limit", 1, kMaxStatusLimit);
  // A cursor is what `next` printed: the server's SSCAN cursor, a whole number.
  if (!f.after.empty() && f.after.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("--after takes the \"next\" value a status printed, not '" + f.after + "'");
  Context c(s, f.name);
  prim::LatchState st = c.latch.read(true, {f.after, limit});
  c.console.result({{"name", f.name},
                    {"exists", st.exists},
                    {"count", st.exists ? Json(st.count) : Json(nullptr)},
                    {"ids", st.ids},
                    {"ids_total", st.ids_total},
                    {"ttl_ms", st.exists ? Json(st.ttl_ms) : Json(nullptr)},
                    {"next", st.next.empty() ? Json(nullptr) : Json(st.next)}});
  return 0;
}

void add_name(CLI::App& sub, LatchFlags& f) { add_table_option(sub, "name", f.name)->required(); }

}  // namespace

Runner define_latch_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto f = std::make_shared<LatchFlags>();

  auto* set = app.add_subcommand("set", "Create a latch with count N (refuses a live one)");
  add_name(*set, *f);
  add_table_option(*set, "count", f->count)->required();
  add_table_option(*set, "--expire", f->expire);
  add_table_flag(*set, "--force", f->force);

  auto* down = app.add_subcommand("count-down", "Count a latch down (never below zero)");
  add_name(*down, *f);
  add_table_option(*down, "--by", f->by);
  add_table_option(*down, "--id", f->id);

  auto* await = app.add_subcommand("await", "Wait until a latch reaches zero");
  add_name(*await, *f);
  auto* wait = add_table_option(*await, "--wait", f->wait);
  add_table_flag(*await, "--no-wait", f->no_wait)->excludes(wait);
  add_conflict_exit_code_flag(*await, f->conflict_exit_code);

  auto* status = app.add_subcommand("status", "Show a latch: count, ids counted (paged), expiry");
  add_name(*status, *f);
  add_table_option(*status, "--limit", f->limit);
  add_table_option(*status, "--after", f->after);

  app.footer(R"(Results:
  set NAME N [--expire DUR] [--force]   prints {"name","count","ttl_ms","previous"}; a live
      latch (count > 0) is refused with exit 75 unless --force; a reached one (count 0)
      may be set again. Ids counted in the earlier round are forgotten.
  count-down NAME [--by K] [--id ID]    prints {"name","count","applied","reached","id",
      "repeated"}: applied is how much was taken off (the count never goes below 0),
      reached is true for the call that brought it to 0; a repeated --id changes nothing
      (repeated: true). A latch that does not exist: exit 75, nothing changed.
  await NAME [-w DUR | -n] [-E N]       exit 0 with {"name","reached":true} once the count
      is 0; {"name","reached":false,"exists","count"} and exit 75 (or -E) when the wait
      runs out. Sleeps on pub/sub; a latch not set yet is waited for.
  status NAME [--limit N] [--after C]   prints {"name","exists","count","ids","ids_total",
      "ttl_ms","next"}: ids is a page of about N (default 1000) of the ids counted, sorted;
      next is null when all were listed, else pass it as --after C for the next page
      (pages come in no order; an id may come twice if the set grows meanwhile).
A reached latch stays (count 0) until its --expire, or 24h when it has none.
Under --layout redisson a latch is Redisson's RCountDownLatch (the count under the bare
name): it is deleted at zero, a missing latch counts as reached, and --id and --expire
are refused.

Examples:
  rlock latch set build-42 4 --expire 2h          # 4 shards must finish
  rlock latch count-down build-42 --id shard-3    # in each shard; a re-run counts once
  rlock latch await build-42 --wait 1h && ./publish.sh
  rlock latch status build-42)");

  return {[f, set, down, await, status](const Settings& settings) {
    if (set->parsed()) return run_set(*f, settings);
    if (down->parsed()) return run_count_down(*f, settings);
    if (await->parsed()) return run_await(*f, settings);
    if (status->parsed()) return run_status(*f, settings);
    throw UsageError(
        "latch: missing subcommand (set, count-down, await or status; see: rlock help latch)");
  }};
}

}  // namespace rlock::cli
