#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "cli/command.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

constexpr const char* kExecUsage = "rlock exec [OPTIONS] NAME -- CMD [ARGS...]";

// `exec`'s command is everything after the first `--`: CLI11 never sees it, so the
// command's own flags can't be mistaken for rlock's.
struct SplitArgs {
  std::vector<std::string> rlock;
  std::vector<std::string> command;
  bool has_dashes = false;
};

SplitArgs split_args(int argc, char** argv) {
  SplitArgs out;
  std::vector<std::string> all(argv + 1, argv + argc);
  auto dashes = std::find(all.begin(), all.end(), "--");
  bool for_exec = std::find(all.begin(), dashes, "exec") != dashes;
  if (dashes != all.end() && for_exec) {
    out.has_dashes = true;
    out.command.assign(dashes + 1, all.end());
    all.erase(dashes, all.end());
  }
  out.rlock = std::move(all);
  return out;
}

void add_help_command(CLI::App& app, std::string& topic) {
  auto* help = app.add_subcommand("help", "Show the help of a subcommand, with examples");
  help->add_option("subcommand", topic, "lock, unlock, exec or inspect")->type_name("SUBCOMMAND");
}

int print_help(CLI::App& app, const std::string& topic) {
  if (topic.empty()) {
    std::cout << app.help("rlock");
    return 0;
  }
  CLI::App* sub = nullptr;
  try {
    sub = app.get_subcommand(topic);
  } catch (const CLI::OptionNotFound&) {
  }
  if (!sub || topic == "help") throw UsageError("help: unknown subcommand '" + topic + "' (try: rlock help)");
  std::cout << sub->help("rlock");
  return 0;
}

}  // namespace

int run(int argc, char** argv) {
  SplitArgs args = split_args(argc, argv);
  CLI::App app("Locks, semaphores and other coordination for shell jobs, through Redis.", "rlock");
  app.set_version_flag("--version", "rlock " RLOCK_VERSION);
  app.fallthrough();
  app.require_subcommand(0, 1);
  app.footer("Run 'rlock help SUBCOMMAND' for its options and examples; rlock(1) has the details.");
  GlobalFlags globals;
  add_global_flags(app, globals);
  std::string help_topic;
  std::vector<Command> commands = {add_lock_command(app), add_unlock_command(app),
                                   add_exec_command(app, args.command), add_inspect_command(app)};
  add_help_command(app, help_topic);

  std::vector<std::string> reversed(args.rlock.rbegin(), args.rlock.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    bool exec_without_dashes = std::find(args.rlock.begin(), args.rlock.end(), "exec") != args.rlock.end() &&
                               !args.has_dashes && dynamic_cast<const CLI::ExtrasError*>(&e);
    if (exec_without_dashes) {
      throw UsageError(std::string("exec: missing '--' before the command (") + kExecUsage + ")");
    }
    throw UsageError(std::string(e.what()) + " (see: rlock --help)");
  }

  if (app.got_subcommand("help")) return print_help(app, help_topic);
  for (const auto& cmd : commands) {
    if (!cmd.app->parsed()) continue;
    if (cmd.app->get_name() == "exec" && args.command.empty()) {
      throw UsageError(args.has_dashes ? std::string("exec: missing command after '--' (") + kExecUsage + ")"
                                       : std::string("exec: missing '--' before the command (") + kExecUsage + ")");
    }
    return cmd.run(resolve_settings(globals));
  }
  std::cerr << app.help("rlock");
  throw UsageError("missing subcommand (lock, unlock, exec, inspect, help)");
}

}  // namespace rlock::cli
