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

// Each subcommand file declares the options, footer and run function of its subcommand
// on `app`, which main's table has created with its name and one-line description.
Runner define_lock_command(CLI::App& app);
Runner define_unlock_command(CLI::App& app);
Runner define_exec_command(CLI::App& app, std::vector<std::string>& command_after_dashes);
Runner define_inspect_command(CLI::App& app);
Runner define_latch_command(CLI::App& app);  // set, count-down, await, status

}  // namespace rlock::cli
