#pragma once

#include <functional>
#include <string>

#include "cli/settings.hpp"

namespace CLI {
class App;
}

namespace rlock::cli {

// One registered subcommand: its CLI11 node and what runs when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int(const Settings&)> run;
};

// Each subcommand file declares its options and its run function here.
Command add_lock_command(CLI::App& parent);
Command add_unlock_command(CLI::App& parent);
Command add_exec_command(CLI::App& parent, std::vector<std::string>& command_after_dashes);
Command add_inspect_command(CLI::App& parent);

}  // namespace rlock::cli
