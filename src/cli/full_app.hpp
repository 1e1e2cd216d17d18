#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/settings.hpp"

namespace rlock::cli {

// The command line with every subcommand's options defined, as the flag table's test and
// the generator of the man page and completions read it (`rlock` itself defines only the
// chosen subcommand's). Nothing is parsed with it.
struct FullApp {
  CLI::App app{"rlock", "rlock"};
  GlobalFlags globals;
  std::vector<std::string> command;
  std::vector<std::string> help_topic;
  std::vector<Runner> runners;  // own what the options store into
};

std::unique_ptr<FullApp> full_app();

// --version and -h/--help, which CLI11 declares itself, with the flag table's text.
void add_help_and_version_flags(CLI::App& app);

// `help SUBCOMMAND [SUBSUBCOMMAND]` (cli/app.cpp).
void add_help_command(CLI::App& app, std::vector<std::string>& topic);

}  // namespace rlock::cli
