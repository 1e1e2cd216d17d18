#include <map>
#include <stdexcept>

#include "docgen/model.hpp"

namespace rlock::docgen {
namespace {

std::string joined_names(const std::vector<const Flag*>& flags) {
  std::string out;
  for (const Flag* f : flags)
    for (const auto& n : names_of(*f)) out += (out.empty() ? "" : " ") + n;
  return out;
}

// What `case $prev in` runs for a value completed as `f` says.
std::string value_action(const Flag& f) {
  std::string words = "'" + std::string(f.choices) + "'";
  switch (f.completion) {
    case Completion::kChoices:
    case Completion::kSuggestions:
      return "COMPREPLY=($(compgen -W " + words + " -- \"$cur\"))";
    case Completion::kCommaList:
      // A comma-separated list: complete the word after the last comma.
      return "local done_words=${cur%\"${cur##*,}\"}\n"
             "            COMPREPLY=($(compgen -P \"$done_words\" -W " +
             words + " -- \"${cur##*,}\"))";
    case Completion::kPrefix:
      return "COMPREPLY=($(compgen -W " + words +
             " -- \"$cur\"))\n"
             "            [[ ${#COMPREPLY[@]} -gt 0 ]] && compopt -o nospace 2>/dev/null";
    case Completion::kFile:
      return "_rlock_files";
    case Completion::kDirectory:
      return "_rlock_files -d";
    default:
      return ":  # a free-form value: nothing sensible to offer";
  }
}

std::string value_cases(const Model& m) {
  // One arm per action, its names in table order.
  std::vector<std::pair<std::string, std::string>> arms;  // action, names
  std::vector<std::string> seen;
  auto add = [&](const Flag* f) {
    if (f->value.empty()) return;
    std::string action = value_action(*f);
    for (const auto& n : names_of(*f)) {
      bool known = false;
      for (const auto& s : seen) known = known || s == n;
      if (known) continue;
      seen.push_back(n);
      bool placed = false;
      for (auto& [a, names] : arms) {
        if (a != action) continue;
        names += " | " + n;
        placed = true;
      }
      if (!placed) arms.emplace_back(action, n);
    }
  };
  for (const Flag* f : m.globals) add(f);
  for (const Command* c : all_commands(m.top))
    for (const Flag* f : c->options) add(f);
  std::string out;
  for (const auto& [action, names] : arms)
    out +=
        "        " + names + ")\n            " + action + "\n            return\n            ;;\n";
  return out;
}

std::string value_options(const Model& m) {
  std::vector<const Flag*> flags;
  for (const Flag* f : m.globals)
    if (!f->value.empty()) flags.push_back(f);
  std::string out = joined_names(flags);
  for (const Command* c : all_commands(m.top))
    for (const Flag* f : c->options)
      if (!f->value.empty())
        for (const auto& n : names_of(*f))
          if ((" " + out + " ").find(" " + n + " ") == std::string::npos) out += " " + n;
  return out;
}

std::string command_cases(const Model& m) {
  std::string out;
  for (const Command* c : all_commands(m.top)) {
    if (c->path.empty() || c->path == "help") continue;
    out += "        '" + c->path + "')\n";
    if (!c->subcommands.empty()) {
      std::string inner;
      for (const auto& s : c->subcommands) inner += (inner.empty() ? "" : " ") + s.name;
      out += "            inner='" + inner + "'\n";
    }
    out += "            opts='" + joined_names(c->options) + "'\n";
    for (size_t i = 0; i < c->positionals.size(); ++i) {
      if (c->positionals[i]->completion != Completion::kLockName) continue;
      out += "            lock_names=" + std::to_string(i) +
             (c->positional_many[i] ? " lock_names_many=1\n" : "\n");
    }
    out += "            ;;\n";
  }
  return out;
}

std::string quoted_paths(const Model& m, bool (*keep)(const Command&)) {
  std::string out;
  for (const Command* c : all_commands(m.top))
    if (!c->path.empty() && keep(*c)) out += (out.empty() ? "'" : " | '") + c->path + "'";
  return out;
}

std::string inner_cases(const Model& m) {
  std::string out;
  for (const auto& c : m.top.subcommands) {
    if (c.subcommands.empty()) continue;
    std::string inner;
    for (const auto& s : c.subcommands) inner += (inner.empty() ? "" : " ") + s.name;
    out += "        " + c.name + ") echo '" + inner + "' ;;\n";
  }
  return out;
}

}  // namespace

std::string bash_completion(const Model& m, const std::string& text) {
  return fill_template(text, [&](const std::string& name, const std::string&) -> std::string {
    std::string subcommands;
    for (const auto& c : m.top.subcommands)
      subcommands += (subcommands.empty() ? "" : " ") + c.name;
    if (name == "SUBCOMMANDS") return "    local subcommands='" + subcommands + "'\n";
    if (name == "GLOBAL_OPTS") return "    local global_opts='" + joined_names(m.globals) + "'\n";
    if (name == "VALUE_OPTS") return "    local arg_opts=' " + value_options(m) + " '\n";
    if (name == "VALUE_CASES") return value_cases(m);
    if (name == "COMMAND_CASES") return command_cases(m);
    if (name == "RUNNING")
      return "        " + quoted_paths(m, [](const Command& c) { return c.runs_command; }) +
             ") return 0 ;;\n";
    if (name == "NESTED")
      return "        " + quoted_paths(m, [](const Command& c) { return !c.subcommands.empty(); }) +
             ") return 0 ;;\n";
    if (name == "INNER") return inner_cases(m);
    throw std::runtime_error("bash template: unknown @" + name + "@");
  });
}

}  // namespace rlock::docgen
