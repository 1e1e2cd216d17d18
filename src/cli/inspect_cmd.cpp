#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "inspect/object_type.hpp"
#include "inspect/prometheus.hpp"
#include "inspect/scan_stream.hpp"
#include "inspect/table.hpp"

namespace rlock::cli {
namespace {

std::string known_types() {
  std::string out;
  for (const auto* t : inspect::object_types())
    out += (out.empty() ? "" : ",") + std::string(t->type());
  return out;
}

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

}  // namespace

Runner define_inspect_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto pattern = std::make_shared<std::string>("*");
  auto types = std::make_shared<std::string>();
  auto* sub = &app;
  sub->add_option("pattern", *pattern, "glob over object names (default *)")->type_name("PATTERN");
  sub->add_option("--type", *types,
                  "only these types, comma-separated: " + known_types() + " (default: all)")
      ->type_name("TYPE[,TYPE]");
  std::string shapes;
  for (const auto* t : inspect::object_types()) {
    shapes += "  " + std::string(t->type()) + ":\n    " + std::string(t->json_shape()) + "\n";
  }
  sub->footer("Prints one JSON array, one object per line, each with a \"type\" field:\n" + shapes +
              R"(An object that cannot be read as its type has an "error" field. Objects stream in
SCAN order (sorted within each SCAN batch) in bounded memory; --format table prints
fixed-width columns TYPE NAME HOLDERS/COUNT TTL FENCE WAITERS; --format prometheus the
Prometheus text format (0.0.4) for node_exporter's textfile collector: gauges
rlock_lock_{held,holders,waiters,lease_remaining_seconds,oldest_waiter_age_seconds},
rlock_semaphore_{permits_in_use,capacity,waiters}, rlock_latch_count,
rlock_queue_items{state="delayed|due|leased|dead"}, rlock_queue_next_due_timestamp_seconds,
rlock_limiter_{tokens,burst}, rlock_object_unreadable, labelled by name, printed once the
whole listing was read. Uses SCAN, never KEYS.

Examples:
  rlock inspect
  rlock inspect 'deploy*' --format table
  rlock inspect --type latch 'ci-*'
  rlock inspect --format prometheus > rlock.prom.tmp && mv rlock.prom.tmp rlock.prom
  rlock inspect --type lock | jq '.[] | select(.waiters_total > 0)')");
  return {[pattern, types](const Settings& settings) {
    auto selected = inspect::select_types(*types);  // a bad --type before any connection
    Console console(settings);
    redis::Topology topology = open_topology(settings);
    prim::KeyLayout layout(settings.prefix);
    if (settings.format == Format::kPrometheus) {
      // Printed only once the whole listing was read: a listing that fails half-way prints
      // nothing, so a textfile collector never takes a partial one for the state.
      inspect::PrometheusWriter out;
      inspect::scan_objects(topology, layout, *pattern, selected,
                            [&](const auto& shown) { out.batch(shown); });
      out.finish([&](const std::string& text) { console.result_text(text); });
      return 0;
    }
    if (settings.format == Format::kTable) {
      bool header = false;  // printed with the first batch: a failure to connect prints nothing
      inspect::scan_objects(topology, layout, *pattern, selected, [&](const auto& shown) {
        std::string text = header ? "" : inspect::table_header();
        header = true;
        for (const auto& s : shown)
          text += inspect::table_row(s.type->type(), s.name, s.decoded.cells);
        console.result_text(text);
      });
      if (!header) console.result_text(inspect::table_header());
      return 0;
    }
    JsonArrayWriter out(console);
    inspect::scan_objects(topology, layout, *pattern, selected,
                          [&](const auto& shown) { out.batch(shown); });
    out.end();
    return 0;
  }};
}

}  // namespace rlock::cli
