#include "cli/flag_table.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "cli/flag_options.hpp"
#include "cli/full_app.hpp"
#include "inspect/object_type.hpp"

using namespace rlock::cli;

namespace {

// "-w,--wait" as CLI11 spells an option's names.
std::string names_of(const CLI::Option& o) {
  std::string out;
  for (const auto& s : o.get_snames()) out += (out.empty() ? "-" : ",-") + s;
  for (const auto& l : o.get_lnames()) out += (out.empty() ? "--" : ",--") + l;
  return out.empty() ? o.get_name() : out;
}

// Every app of the command line with its command path.
void each_app(CLI::App& app, const std::function<void(CLI::App&, const std::string&)>& fn) {
  fn(app, command_path(app));
  for (CLI::App* sub : app.get_subcommands({})) each_app(*sub, fn);
}

std::string type_name_of(const CLI::Option& o) {
  std::string t = o.get_type_name();
  return t.substr(0, t.find(':'));  // CLI11 appends a check's choices
}

}  // namespace

TEST_CASE("each registered option is the flag table's, names, value name and help") {
  auto full = full_app();
  int seen = 0;
  each_app(full->app, [&](CLI::App& app, const std::string& path) {
    for (const CLI::Option* o : app.get_options()) {
      std::string names = names_of(*o);
      if (!path.empty() && names == "-h,--help") continue;  // CLI11 copies it to each
      CAPTURE(path);
      CAPTURE(names);
      const Flag& f = flag_of(path, o->get_lnames().empty() ? names.substr(0, names.find(','))
                                                            : "--" + o->get_lnames().front());
      CHECK(f.names == names);
      CHECK(f.help_line() == o->get_description());
      if (o->get_type_size() != 0) CHECK(f.value == type_name_of(*o));
      if (o->get_type_size() == 0) CHECK(f.value.empty());
      ++seen;
    }
  });
  CHECK(seen > 100);
}

TEST_CASE("each flag of the table is registered for each command it names") {
  auto full = full_app();
  std::set<std::pair<std::string, std::string>> registered;
  each_app(full->app, [&](CLI::App& app, const std::string& path) {
    for (const CLI::Option* o : app.get_options()) registered.insert({path, names_of(*o)});
  });
  for (const Flag& f : flag_table()) {
    std::string_view rest = f.commands;
    do {
      std::string command(rest.substr(0, rest.find(',')));
      CAPTURE(command);
      CAPTURE(f.names);
      CHECK(registered.count({command, std::string(f.names)}) == 1);
      rest = rest.find(',') == std::string_view::npos ? "" : rest.substr(rest.find(',') + 1);
    } while (!rest.empty());
  }
}

TEST_CASE("flag table: no name twice in one command, man text only for options") {
  for (const Flag& a : flag_table()) {
    CAPTURE(a.names);
    CHECK(!a.help.empty());
    CHECK(a.help_line().find('\n') == std::string::npos);
    if (a.positional()) CHECK(a.man.empty());
    for (const Flag& b : flag_table()) {
      if (&a == &b || a.global() != b.global()) continue;
      bool same_command = a.global() || [&] {
        std::string_view rest = a.commands;
        while (!rest.empty()) {
          std::string command(rest.substr(0, rest.find(',')));
          if (b.accepted_by(command)) return true;
          rest = rest.find(',') == std::string_view::npos ? "" : rest.substr(rest.find(',') + 1);
        }
        return false;
      }();
      if (same_command) CHECK(a.long_name() != b.long_name());
    }
  }
}

TEST_CASE("flag table: inspect --type offers exactly the object types") {
  std::string types;
  for (const auto* t : rlock::inspect::object_types())
    types += (types.empty() ? "" : " ") + std::string(t->type());
  CHECK(flag_of("inspect", "--type").choices == types);
}

TEST_CASE("flag table: help_line adds the default") {
  CHECK(flag_of("lock", "--lease").help_line() == "lease of the hold (default 30s)");
  CHECK(flag_of("", "--url").help_line().find("(default") == std::string::npos);
}
