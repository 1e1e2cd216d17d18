#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "cli/inspect_watch.hpp"
#include "cli/whole_flag.hpp"
#include "inspect/object_type.hpp"
#include "inspect/prometheus.hpp"
#include "inspect/scan_stream.hpp"
#include "inspect/table.hpp"
#include "inspect/types.hpp"
#include "inspect/watch.hpp"
#include "prim/run_history.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

// Writes one JSON array as it goes: "[" with the first batch read (so that a failure to
// connect prints nothing), one object per line separated by ",", then "]". When the
// listing fails half-way the "]" is missing, so a truncated listing never parses as a
// complete one (and the exit status says why).
class JsonArrayWriter {
 public:
  explicit JsonArrayWriter(const Console& console) : console_(console) {}
  void batch(const std::vector<inspect::Shown>& shown) {
    std::string text = opened_ ? "" : "[";
    opened_ = true;
    for (const auto& s : shown) {
      text += first_ ? "\n" : ",\n";
      first_ = false;
      // Bytes that are not UTF-8 (written by other clients) print as U+FFFD.
      text += s.decoded.json.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    console_.result_text(text);
  }
  void end() const {
    console_.result_text(std::string(opened_ ? "" : "[") + (first_ ? "]\n" : "\n]\n"));
  }

 private:
  const Console& console_;
  bool opened_ = false;
  bool first_ = true;
};

// --interval, checked before any connection: a usage error never waits for Redis.
Millis watch_interval(const std::optional<std::string>& text) {
  if (!text) return Millis(1000);
  Millis interval = parse_duration(*text, "--interval");
  if (interval < inspect::kMinWatchInterval) {
    throw UsageError("--interval must be at least " + format_duration(inspect::kMinWatchInterval) +
                     ", not " + format_duration(interval));
  }
  return interval;
}

// The subcommand's help after its options: the JSON shapes, the formats, --watch.
std::string inspect_footer() {
  std::string shapes;
  for (const auto* t : inspect::object_types()) {
    shapes += "  " + std::string(t->type()) + ":\n    " + std::string(t->json_shape()) + "\n";
  }
  return "Prints one JSON array, one object per line, each with a \"type\" field:\n" + shapes +
         R"(An object that cannot be read as its type has an "error" field. Objects stream in
SCAN order (sorted within each SCAN batch) in bounded memory; --format table prints
fixed-width columns TYPE NAME HOLDERS/COUNT TTL FENCE WAITERS (and MEMBER on a quorum: the
member, majority or minority); --format prometheus the
Prometheus text format (0.0.4) for node_exporter's textfile collector: gauges
rlock_lock_{held,holders,waiters,lease_remaining_seconds,oldest_waiter_age_seconds},
rlock_semaphore_{permits_in_use,capacity,waiters}, rlock_latch_count,
rlock_queue_items{state="delayed|due|leased|dead"}, rlock_queue_next_due_timestamp_seconds,
rlock_limiter_{tokens,burst}, rlock_last_run_exit_status (-1: lost),
rlock_last_run_end_timestamp_seconds, rlock_object_unreadable, labelled by name, printed once the
whole listing was read. Uses SCAN, never KEYS.

--watch lists again, sorted by name, until q, ^C, INT, TERM, HUP or QUIT (exit 0). On a
terminal: the table on the alternate screen, refreshed in place under a header (URL,
time, "q to quit"), cut to the terminal's size ("... N more"), given back as it was on
the way out. Otherwise: the JSON array on one line per listing, until the reader goes
away. It lists again as soon as a key under the prefix changes where the server sends
keyspace notifications (notify-keyspace-events is only read: KEA turns them on; not on a
cluster, whose nodes notify of their own keys only), bursts coalesced (listings start at
least 100ms and the last one's duration apart); else, and at the latest, every
--interval. Redis lost after the first listing: tried again every --interval
("reconnecting..." on the terminal).

Examples:
  rlock inspect
  rlock inspect 'deploy*' --format table
  rlock inspect --type latch 'ci-*'
  rlock inspect --watch 'deploy*'
  rlock inspect --watch --interval 5s --type lock > locks.jsonl
  rlock inspect --format prometheus > rlock.prom.tmp && mv rlock.prom.tmp rlock.prom
  rlock inspect --type lock | jq '.[] | select(.waiters_total > 0)'
  rlock inspect --type runs --history 3 nightly --format table)";
}

// --history N, checked before any connection.
int history_of(const std::string& text) {
  return static_cast<int>(parse_whole_flag(text, "--history", 1, prim::RunHistory::kKept));
}

// One listing in the chosen format.
int list_once(const Settings& settings, const prim::KeyLayout& layout, const std::string& pattern,
              const std::vector<const inspect::ObjectType*>& selected) {
  Console console(settings);
  redis::Topology topology = open_topology(settings);
  if (settings.format == Format::kPrometheus) {
    // Printed only once the whole listing was read: a listing that fails half-way prints
    // nothing, so a textfile collector never takes a partial one for the state.
    inspect::PrometheusWriter out;
    inspect::scan_objects(topology, layout, pattern, selected,
                          [&](const auto& shown) { out.batch(shown); });
    out.finish([&](const std::string& text) { console.result_text(text); });
    return 0;
  }
  if (settings.format == Format::kTable) {
    bool header = false;  // printed with the first batch: a failure to connect prints nothing
    const bool quorum = !topology.quorum_members().empty();
    inspect::scan_objects(topology, layout, pattern, selected, [&](const auto& shown) {
      std::string text = header ? "" : inspect::table_header(quorum);
      header = true;
      for (const auto& s : shown) text += inspect::table_row(s.type->type(), s.name, s.decoded);
      console.result_text(text);
    });
    if (!header) console.result_text(inspect::table_header(quorum));
    return 0;
  }
  JsonArrayWriter out(console);
  inspect::scan_objects(topology, layout, pattern, selected,
                        [&](const auto& shown) { out.batch(shown); });
  out.end();
  return 0;
}
}  // namespace

Runner define_inspect_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto pattern = std::make_shared<std::string>("*");
  auto types = std::make_shared<std::string>();
  auto watch = std::make_shared<bool>(false);
  auto interval = std::make_shared<std::optional<std::string>>();
  auto history = std::make_shared<std::string>("10");
  // The runs type showing --history runs, in place of the default one in the selection.
  auto runs = std::make_shared<std::unique_ptr<inspect::ObjectType>>();
  add_table_option(app, "pattern", *pattern);
  add_table_option(app, "--type", *types);
  add_table_flag(app, "--watch", *watch);
  add_table_option(app, "--interval", *interval);
  add_table_option(app, "--history", *history);
  app.footer(inspect_footer());
  return {[pattern, types, watch, interval, history, runs](const Settings& settings) {
    auto selected = inspect::select_types(*types);  // a bad --type before any connection
    *runs = inspect::make_runs_type(history_of(*history));
    std::replace(selected.begin(), selected.end(), &inspect::runs_type(),
                 static_cast<const inspect::ObjectType*>(runs->get()));
    auto layout = make_layout(settings);
    if (layout->locks_only()) {
      // Redisson's objects: its locks, and its RRateLimiter as a limiter.
      if (types->empty()) selected = inspect::select_types("lock,limiter");
      // A Redisson latch is a bare integer that a listing of every type would take for
      // one anywhere, a permit-expirable semaphore a zset: each is listed only when asked
      // for alone.
      const bool latch_alone =
          selected.size() == 1 && (selected[0]->type() == "latch" || selected[0]->type() == "sem");
      for (const auto* t : selected) {
        if (t->type() != "lock" && t->type() != "limiter" && !latch_alone)
          require_rlock_layout(settings, "inspect --type " + std::string(t->type()));
      }
    }
    if (*interval && !*watch) throw UsageError("--interval is for --watch");
    if (*watch) {
      if (settings.format == Format::kPrometheus) {
        // A scrape reads a file once; a stream of expositions fits no collector.
        throw UsageError("--watch prints a table or JSON lines, not --format prometheus");
      }
      return run_inspect_watch(settings, {*pattern, selected, watch_interval(*interval)});
    }
    return list_once(settings, *layout, *pattern, selected);
  }};
}

}  // namespace rlock::cli
