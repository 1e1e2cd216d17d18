#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "cli/flag_table.hpp"

namespace rlock::cli {

// CLI11 registration from the flag table: the names, value name and help line come from
// the entry named `name` of the command `app` is ("sem acquire"; the top app: a global
// option), the target from the caller.

// The command path of `app`: "" for the top app, else its name after its parents'.
std::string command_path(const CLI::App& app);

// An option or positional argument read into `target`.
template <typename T>
CLI::Option* add_table_option(CLI::App& app, std::string_view name, T& target) {
  const Flag& f = flag_of(command_path(app), name);
  return app.add_option(std::string(f.names), target, f.help_line())
      ->type_name(std::string(f.value));
}

// An option whose value is handed to `read` as it is parsed (checked at once).
CLI::Option* add_table_option_function(CLI::App& app, std::string_view name,
                                       std::function<void(const std::string&)> read);

// A switch, counted into `target`, or (without one) only looked up afterwards.
CLI::Option* add_table_flag(CLI::App& app, std::string_view name, bool& target);
CLI::Option* add_table_flag(CLI::App& app, std::string_view name);

// Whether the table gives the command `app` is a flag named `name`.
bool table_has(const CLI::App& app, std::string_view name);

}  // namespace rlock::cli
