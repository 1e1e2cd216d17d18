#include <CLI/CLI.hpp>
#include <memory>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/lock_options.hpp"
#include "inspect/lock_view.hpp"
#include "inspect/table.hpp"

namespace rlock::cli {
namespace {

Json to_json(const inspect::LockView& v) {
  Json j = {{"type", "lock"},
            {"name", v.name},
            {"key", v.key},
            {"holders", holders_json(v.holders)},
            {"ttl_ms", v.ttl_ms}};
  j["fence"] = v.fence ? Json(*v.fence) : Json(nullptr);
  j["waiters"] = v.waiters;
  if (!v.error.empty()) j["error"] = v.error;
  return j;
}

}  // namespace

Runner define_inspect_command(CLI::App& app, std::vector<std::string>& /*command_after_dashes*/) {
  auto pattern = std::make_shared<std::string>("*");
  auto* sub = &app;
  sub->add_option("pattern", *pattern, "glob over lock names (default *)")->type_name("PATTERN");
  sub->footer(R"(Prints a JSON array with, for each held lock,
{"type":"lock","name","key","holders":[{"owner","count"}],"ttl_ms","fence","waiters"};
--format table prints it for people. Uses SCAN, never KEYS.

Examples:
  rlock inspect
  rlock inspect 'deploy*' --format table)");
  return {[pattern](const Settings& settings) {
    Console console(settings);
    redis::Topology topology(settings.connect);
    prim::KeyLayout layout(settings.prefix);
    auto views = inspect::scan_locks(topology, layout, *pattern);
    if (settings.table) {
      console.result_text(inspect::render_table(views));
      return 0;
    }
    Json arr = Json::array();
    for (const auto& v : views) arr.push_back(to_json(v));
    console.result(arr);
    return 0;
  }};
}

}  // namespace rlock::cli
