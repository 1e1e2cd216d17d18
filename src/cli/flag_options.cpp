#include "cli/flag_options.hpp"

namespace rlock::cli {

std::string command_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* a = &app; a->get_parent(); a = a->get_parent())
    path = path.empty() ? a->get_name() : a->get_name() + " " + path;
  return path;
}

CLI::Option* add_table_option_function(CLI::App& app, std::string_view name,
                                       std::function<void(const std::string&)> read) {
  const Flag& f = flag_of(command_path(app), name);
  return app.add_option_function<std::string>(std::string(f.names), std::move(read), f.help_line())
      ->type_name(std::string(f.value));
}

CLI::Option* add_table_flag(CLI::App& app, std::string_view name, bool& target) {
  const Flag& f = flag_of(command_path(app), name);
  return app.add_flag(std::string(f.names), target, f.help_line());
}

CLI::Option* add_table_flag(CLI::App& app, std::string_view name) {
  const Flag& f = flag_of(command_path(app), name);
  return app.add_flag(std::string(f.names))->description(f.help_line());
}

bool table_has(const CLI::App& app, std::string_view name) {
  std::string command = command_path(app);
  for (const Flag& f : flag_table()) {
    if (f.named(name) && (command.empty() ? f.global() : f.accepted_by(command) && !f.global()))
      return true;
  }
  return false;
}

}  // namespace rlock::cli
