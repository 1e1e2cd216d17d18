#include "docgen/model.hpp"

#include <sstream>
#include <stdexcept>
#include <string_view>

#include "cli/command.hpp"
#include "cli/flag_options.hpp"
#include "cli/full_app.hpp"

namespace rlock::docgen {
namespace {

// Whether `path` runs `-- CMD`: a subcommand's usage line names it ("rlock sem exec
// [OPTIONS] NAME -- CMD" names sem exec; "rlock exec [OPTIONS] ..." exec itself).
bool runs_command(const std::string& path) {
  for (const auto& s : cli::subcommands()) {
    if (!s.command_usage) continue;
    std::string usage(s.command_usage);
    std::string runner = "rlock " + std::string(s.name);
    std::string rest = usage.substr(runner.size() + 1);
    std::string next = rest.substr(0, rest.find(' '));
    if (!next.empty() && next[0] != '[' && next != "NAME" && next != "QUEUE") runner += " " + next;
    if (runner == "rlock " + path) return true;
  }
  return false;
}

Command command_of(CLI::App& app) {
  Command c;
  c.path = cli::command_path(app);
  c.name = app.get_parent() ? app.get_name() : "rlock";
  c.description = app.get_description();
  c.runs_command = runs_command(c.path);
  if (!c.path.empty()) {
    for (const Flag& f : cli::flag_table()) {
      if (f.global() || !f.accepted_by(c.path)) continue;
      if (!f.positional()) {
        c.options.push_back(&f);
        continue;
      }
      c.positionals.push_back(&f);
      const CLI::Option* o = app.get_option_no_throw(std::string(f.names));
      if (!o) throw std::logic_error("positional " + std::string(f.names) + " of " + c.path);
      c.positional_many.push_back(o->get_expected_max() > 1);
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) c.subcommands.push_back(command_of(*sub));
  return c;
}

void collect(const Command& c, std::vector<const Command*>& out) {
  out.push_back(&c);
  for (const auto& s : c.subcommands) collect(s, out);
}

}  // namespace

Model build_model() {
  auto full = cli::full_app();
  Model m;
  m.top = command_of(full->app);
  for (const Flag& f : cli::flag_table()) {
    if (f.global() && !f.positional()) m.globals.push_back(&f);
  }
  return m;
}

std::vector<const Command*> all_commands(const Command& c) {
  std::vector<const Command*> out;
  collect(c, out);
  return out;
}

std::vector<std::string> names_of(const Flag& f) {
  std::vector<std::string> out;
  std::string_view rest = f.names;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    out.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  return out;
}

std::string fill_template(
    const std::string& text,
    const std::function<std::string(const std::string&, const std::string&)>& fill) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    size_t at = line.find('@');
    size_t end = line.rfind('@');
    bool marker = at != std::string::npos && end > at + 1 && line.find_first_not_of(" \t") == at &&
                  end == line.size() - 1 && line.find_first_of("@", at + 1) == end;
    if (!marker) {
      out += line + "\n";
      continue;
    }
    std::string inner = line.substr(at + 1, end - at - 1);
    size_t space = inner.find(' ');
    std::string name = inner.substr(0, space);
    std::string arg = space == std::string::npos ? "" : inner.substr(space + 1);
    bool upper = !name.empty();
    for (char ch : name) upper = upper && ((ch >= 'A' && ch <= 'Z') || ch == '_');
    if (!upper) {
      out += line + "\n";
      continue;
    }
    out += fill(name, arg);
  }
  return out;
}

}  // namespace rlock::docgen
