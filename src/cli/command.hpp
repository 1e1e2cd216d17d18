#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/settings.hpp"

namespace CLI {
class App;
}

namespace rlock::cli {

// What runs when a subcommand was chosen.
struct Runner {
  std::function<int(const Settings&)> run;
};

// Declares a subcommand's options, footer and run function on `app`, which the table below
// has created with its name and description. `command_after_dashes` is what followed `--`
// (for subcommands that run a command).
using DefineFn = Runner (*)(CLI::App& app, std::vector<std::string>& command_after_dashes);

// One subcommand. Adding a subcommand is adding its file and one entry to subcommands().
struct Subcommand {
  const char* name;
  const char* description;
  // Non-null for a subcommand that runs `-- CMD [ARGS...]`: its usage line, for errors.
  const char* command_usage;
  DefineFn define;
};

// Every subcommand, in help order (cli/subcommands.cpp).
const std::vector<Subcommand>& subcommands();

Runner define_lock_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_unlock_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_exec_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_elect_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_sem_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_inspect_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_latch_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_limit_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_delay_push_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_delay_pop_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_doctor_command(CLI::App& app, std::vector<std::string>& command_after_dashes);

}  // namespace rlock::cli
