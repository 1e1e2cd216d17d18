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

// The subcommands, in help order. Only the one the command line names gets its options
// defined (CLI11 builds every option eagerly, a measurable part of start-up); the others
// exist with their name and description for the overview and for errors.
struct Entry {
  const char* name;
  const char* description;
};
constexpr Entry kSubcommands[] = {
    {"lock", "Acquire (or re-enter) a lock and hold it for its lease"},
    {"unlock", "Release one level of a lock held by an owner"},
    {"exec", "Run a command while holding a lock"},
    {"inspect", "Show held locks: holders, lease left, fence, waiters"},
    {"latch", "Countdown latches: set, count-down, await, status"},
};

// Global options that take a value, so that value is not taken for a subcommand name.
bool takes_value(const std::string& arg) {
  for (const char* o : {"--url", "--password-file", "--prefix", "--connect-timeout", "--timeout", "--format"}) {
    if (arg == o) return true;
  }
  return false;
}

// The subcommand whose options must be defined: the first word that is not an option or a
// global option's value; for `help X`, X. Empty when unclear: then all are defined.
std::string chosen_subcommand(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (takes_value(args[i])) {
      ++i;
    } else if (!args[i].empty() && args[i][0] != '-') {
      if (args[i] != "help") return args[i];
      return i + 1 < args.size() ? args[i + 1] : std::string();
    }
  }
  return {};
}

Runner define(const std::string& name, CLI::App& sub, std::vector<std::string>& command) {
  if (name == "lock") return define_lock_command(sub);
  if (name == "unlock") return define_unlock_command(sub);
  if (name == "exec") return define_exec_command(sub, command);
  if (name == "latch") return define_latch_command(sub);
  return define_inspect_command(sub);
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
  std::string chosen = chosen_subcommand(args.rlock);
  bool known = std::any_of(std::begin(kSubcommands), std::end(kSubcommands),
                           [&](const Entry& e) { return chosen == e.name; });
  std::vector<std::pair<CLI::App*, Runner>> commands;
  for (const auto& e : kSubcommands) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
    if (!known || chosen == e.name) commands.emplace_back(sub, define(e.name, *sub, args.command));
  }
  std::string help_topic;
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
  for (const auto& [sub, runner] : commands) {
    if (!sub->parsed()) continue;
    if (sub->get_name() == "exec" && args.command.empty()) {
      throw UsageError(args.has_dashes ? std::string("exec: missing command after '--' (") + kExecUsage + ")"
                                       : std::string("exec: missing '--' before the command (") + kExecUsage + ")");
    }
    return runner.run(resolve_settings(globals));
  }
  std::cerr << app.help("rlock");
  throw UsageError("missing subcommand (lock, unlock, exec, inspect, help)");
}

}  // namespace rlock::cli
