#include <stdexcept>

#include "docgen/model.hpp"

namespace rlock::docgen {
namespace {

std::string quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// The arguments that say what a value is completed with.
std::string value_arguments(const Flag& f) {
  if (f.value.empty()) return "";
  switch (f.completion) {
    case Completion::kFile:
      return " -r -F";
    case Completion::kDirectory:
      return " -x -a '(__fish_complete_directories)'";
    case Completion::kChoices:
    case Completion::kSuggestions:
    case Completion::kCommaList:
    case Completion::kPrefix:
      return " -x -a " + quoted(f.choices);
    default:
      return " -x";
  }
}

std::string option_lines(const std::string& condition, const Flag& f) {
  std::string out;
  bool first = true;
  for (const auto& name : names_of(f)) {
    if (!name.starts_with("--")) continue;
    std::string line = "complete -c rlock -n " + quoted(condition);
    // The short name goes with the first long one.
    if (first) {
      for (const auto& s : names_of(f))
        if (!s.starts_with("--")) line += " -s " + s.substr(1);
    }
    line += " -l " + name.substr(2) + value_arguments(f) + " -d " + quoted(f.help_line());
    out += line + "\n";
    first = false;
  }
  return out;
}

std::string words(const std::vector<Command>& commands) {
  std::string out;
  for (const auto& c : commands) out += (out.empty() ? "" : " ") + c.name;
  return out;
}

std::string value_options(const Model& m) {
  std::string out;
  std::vector<std::string> seen;
  auto add = [&](const Flag* f) {
    if (f->value.empty()) return;
    for (const auto& name : names_of(*f)) {
      bool known = false;
      for (const auto& s : seen) known = known || s == name;
      if (known) continue;
      seen.push_back(name);
      out += (out.empty() ? "" : " ") + name;
    }
  };
  for (const Flag* f : m.globals) add(f);
  for (const Command* c : all_commands(m.top))
    for (const Flag* f : c->options) add(f);
  return out;
}

std::string completions(const Model& m) {
  std::string out = "# Subcommands.\n";
  const std::string nothing = "__rlock_at";
  for (const auto& c : m.top.subcommands)
    out +=
        "complete -c rlock -n " + nothing + " -a " + c.name + " -d " + quoted(c.description) + "\n";
  std::string after = "; and not __rlock_after_dashdash";
  for (const Command* c : all_commands(m.top)) {
    if (c->path.empty()) continue;
    if (!c->subcommands.empty()) {
      out += "\n# " + c->path + " and its subcommands.\n";
      for (const auto& s : c->subcommands)
        out += "complete -c rlock -n " + quoted("__rlock_at " + c->path) + " -a " + s.name +
               " -d " + quoted(s.description) + "\n";
      out += "complete -c rlock -n " + quoted("__rlock_help_wants " + c->path) + " -a " +
             quoted(words(c->subcommands)) + "\n";
      continue;
    }
    out += "\n# " + c->path + ".\n";
    std::string condition = "__rlock_at " + c->path + (c->runs_command ? after : "");
    for (const Flag* f : c->options) out += option_lines(condition, *f);
    for (size_t i = 0; i < c->positionals.size(); ++i) {
      const Flag* p = c->positionals[i];
      if (p->completion == Completion::kLockName) {
        std::string wants = "__rlock_wants_positional " + std::to_string(i + 1) +
                            (c->positional_many[i] ? " many " : " one ") + c->path;
        out +=
            "complete -c rlock -n " + quoted(wants) + " -a '(__rlock_lock_names)' -d 'Held lock'\n";
      } else if (p->completion == Completion::kSubcommand) {
        out += "complete -c rlock -n " +
               quoted("__rlock_wants_positional " + std::to_string(i + 1) + " one " + c->path) +
               " -a " + quoted(words(m.top.subcommands)) + "\n";
      }
    }
    if (c->runs_command)
      out += "complete -c rlock -n " + quoted(condition) +
             " -a -- -d 'End of rlock options; the command follows'\n";
  }
  out += "\n# Global options, before or after the subcommand (not after `--`).\n";
  for (const Flag* f : m.globals) out += option_lines("not __rlock_after_dashdash", *f);
  out += "complete -c rlock -n __rlock_after_dashdash -x -a '(__rlock_exec_command)'\n";
  return out;
}

std::string list_of(const Model& m, bool (*keep)(const Command&)) {
  std::string out;
  for (const Command* c : all_commands(m.top)) {
    if (!c->path.empty() && keep(*c)) out += (out.empty() ? "" : " ") + quoted(c->path);
  }
  return out;
}

}  // namespace

std::string fish_completion(const Model& m, const std::string& text) {
  return fill_template(text, [&](const std::string& name, const std::string&) -> std::string {
    if (name == "VALUE_OPTIONS") return "            case " + value_options(m) + "\n";
    if (name == "NESTED")
      return "        case " + list_of(m, [](const Command& c) { return !c.subcommands.empty(); }) +
             "\n";
    if (name == "RUNNING")
      return "    contains -- (__rlock_path) " +
             list_of(m, [](const Command& c) { return c.runs_command; }) + "\n";
    if (name == "COMPLETIONS") return completions(m);
    throw std::runtime_error("fish template: unknown @" + name + "@");
  });
}

}  // namespace rlock::docgen
