#include "cli/flag_table.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace rlock::cli {
namespace {

// Whether the comma-separated `list` holds `item`.
bool listed_in(std::string_view list, std::string_view item) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (list.substr(0, comma) == item) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

bool Flag::accepted_by(std::string_view command) const {
  return global() || listed_in(commands, command);
}

bool Flag::named(std::string_view name) const { return listed_in(names, name); }

std::string_view Flag::long_name() const {
  std::string_view rest = names;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    if (name.starts_with("--")) return name;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return names.substr(0, names.find(','));
}

std::string Flag::help_line() const {
  std::string line(help);
  if (!default_value.empty()) line += " (default " + std::string(default_value) + ")";
  return line;
}

std::span<const Flag> flag_table() {
  static const std::vector<Flag> kAll = [] {
    std::vector<Flag> all;
    for (auto part : {global_flags(), lock_flags(), exec_flags(), elect_flags(), sem_flags(),
                      inspect_flags(), latch_flags(), limit_flags(), delay_flags()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return kAll;
}

const Flag& flag_of(std::string_view command, std::string_view name) {
  for (const Flag& f : flag_table()) {
    if (f.named(name) && (command.empty() ? f.global() : listed_in(f.commands, command))) return f;
  }
  throw std::logic_error("no flag " + std::string(name) + " of '" + std::string(command) +
                         "' in the flag table");
}

}  // namespace rlock::cli
