#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/flag_table.hpp"

namespace rlock::docgen {

using cli::Completion;
using cli::Flag;

// One command of the command line as the generators see it: what CLI11 defines (its
// subcommands, descriptions) joined with the flag table (its options and positionals).
struct Command {
  std::string path;  // "sem acquire"; "" for rlock itself
  std::string name;  // "acquire"
  std::string description;
  std::vector<const Flag*> options;      // its own, not the global ones, in table order
  std::vector<const Flag*> positionals;  // in order
  std::vector<bool> positional_many;     // whether positionals[i] takes several words
  std::vector<Command> subcommands;
  bool runs_command = false;  // takes `-- CMD [ARGS...]`
};

struct Model {
  Command top;  // its subcommands are rlock's, help included
  std::vector<const Flag*> globals;
};

Model build_model();

// Every command below `c` (and `c` itself), depth first.
std::vector<const Command*> all_commands(const Command& c);

// The names of a flag, split ("-w", "--wait").
std::vector<std::string> names_of(const Flag& f);

// Replaces each line "@NAME ARG@" (ARG may be empty) of `text` by `fill(NAME, ARG)`.
std::string fill_template(
    const std::string& text,
    const std::function<std::string(const std::string&, const std::string&)>& fill);

std::string man_page(const Model& m, const std::string& text);
std::string bash_completion(const Model& m, const std::string& text);
std::string zsh_completion(const Model& m, const std::string& text);
std::string fish_completion(const Model& m, const std::string& text);

}  // namespace rlock::docgen
