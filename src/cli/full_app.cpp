#include "cli/full_app.hpp"

#include "cli/flag_table.hpp"

namespace rlock::cli {

void add_help_and_version_flags(CLI::App& app) {
  const Flag& version = flag_of("", "--version");
  const Flag& help = flag_of("", "--help");
  app.set_version_flag(std::string(version.names), "rlock " RLOCK_VERSION, version.help_line());
  app.set_help_flag(std::string(help.names), help.help_line());
}

std::unique_ptr<FullApp> full_app() {
  auto full = std::make_unique<FullApp>();
  add_help_and_version_flags(full->app);
  add_global_flags(full->app, full->globals);
  for (const auto& e : subcommands()) {
    CLI::App* sub = full->app.add_subcommand(e.name, e.description);
    full->runners.push_back(e.define(*sub, full->command));
  }
  add_help_command(full->app, full->help_topic);
  return full;
}

}  // namespace rlock::cli
