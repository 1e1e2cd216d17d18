#include <stdexcept>

#include "docgen/model.hpp"

namespace rlock::docgen {
namespace {

// Text inside a single-quoted spec, where [ ] : are the spec's own.
std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\'') {
      out += "'\"'\"'";
      continue;
    }
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string words_action(std::string_view words) {
  std::string out = "(";
  for (char c : words) {
    if (c == ':' || c == '\\' || c == '(' || c == ')') out += '\\';
    out += c;
  }
  return out + ")";
}

std::string action_of(const Flag& f) {
  switch (f.completion) {
    case Completion::kFile:
      return "_files";
    case Completion::kDirectory:
      return "_files -/";
    case Completion::kChoices:
    case Completion::kSuggestions:
    case Completion::kPrefix:
      return words_action(f.choices);
    case Completion::kCommaList:
      return "_values -s , " + std::string(f.value.substr(0, f.value.find('['))) + " " +
             std::string(f.choices);
    case Completion::kLockName:
      return "_rlock_lock_names";
    case Completion::kSubcommand:
      return "_rlock_subcommands";
    default:
      return " ";
  }
}

// `'(-w --wait)'{-w+,--wait=}'[help]:DUR:action'`
std::string option_spec(const Flag& f) {
  std::vector<std::string> names = names_of(f);
  std::string group, spellings;
  for (const auto& n : names) {
    group += (group.empty() ? "" : " ") + n;
    std::string s = n;
    if (!f.value.empty()) s += n.starts_with("--") ? "=" : "+";
    spellings += (spellings.empty() ? "" : ",") + s;
  }
  bool version_or_help = f.long_name() == "--version" || f.long_name() == "--help";
  std::string head = version_or_help ? "'(- *)'" : f.repeatable ? "'*'" : "'(" + group + ")'";
  std::string spec = head + (names.size() > 1 ? "{" + spellings + "}" : spellings);
  spec += "'[" + escaped(f.help_line()) + "]";
  if (!f.value.empty()) spec += ":" + escaped(f.value) + ":" + action_of(f);
  return spec + "'";
}

std::string function_name(const std::string& path) {
  std::string out = "_rlock_cmd";
  for (char c : path) out += (c == ' ' || c == '-') ? '_' : c;
  return out;
}

std::string described(const std::vector<Command>& commands) {
  std::string out;
  for (const auto& c : commands)
    out += (out.empty() ? "" : " ") + c.name + "\\:\"" + escaped(c.description) + "\"";
  return out;
}

std::string nested_function(const Command& c) {
  std::string out = function_name(c.path) + "() {\n";
  out += "  local curcontext=$curcontext state state_descr line ret=1\n";
  out += "  _arguments -C $_rlock_global_opts \\\n";
  out += "    '1: :((" + described(c.subcommands) + "))' \\\n";
  out += "    '*:: :->args' && ret=0\n";
  out += "  [[ $state == args ]] || return ret\n  case ${words[1]} in\n";
  for (const auto& s : c.subcommands)
    out += "    " + s.name + ") " + function_name(s.path) + " && ret=0 ;;\n";
  return out + "  esac\n  return ret\n}\n\n";
}

std::string leaf_function(const Command& c) {
  std::string out = function_name(c.path) + "() {\n";
  if (c.runs_command) out += "  _rlock_after_dashdash && return\n";
  out += "  _arguments -s $_rlock_global_opts";
  for (const Flag* f : c.options) out += " \\\n    " + option_spec(*f);
  for (size_t i = 0; i < c.positionals.size(); ++i) {
    const Flag& p = *c.positionals[i];
    std::string help = escaped(p.help_line());
    bool last = i + 1 == c.positionals.size();
    if (c.positional_many[i]) {
      out += " \\\n    '" + std::to_string(i + 1) + ":" + help + ":" + action_of(p) + "'";
      out += c.runs_command && last
                 ? " \\\n    '*:another " + escaped(p.value) + ", or -- before the command:(--)'"
                 : " \\\n    '*:" + help + ":" + action_of(p) + "'";
    } else {
      out += " \\\n    '" + std::to_string(i + 1) + ":" + help + ":" + action_of(p) + "'";
      if (c.runs_command && last) out += " \\\n    '" + std::to_string(i + 2) + ":separator:(--)'";
    }
  }
  return out + "\n}\n\n";
}

std::string functions(const Model& m) {
  std::string out;
  for (const Command* c : all_commands(m.top)) {
    if (c->path.empty() || c->path == "help") continue;
    out += c->subcommands.empty() ? leaf_function(*c) : nested_function(*c);
  }
  return out;
}

std::string global_specs(const Model& m) {
  std::string out;
  for (const Flag* f : m.globals) out += "    " + option_spec(*f) + "\n";
  return out;
}

std::string subcommand_list(const Model& m) {
  std::string out;
  for (const auto& c : m.top.subcommands)
    out += "    '" + c.name + ":" + escaped(c.description) + "'\n";
  return out;
}

std::string dispatch(const Model& m) {
  std::string out;
  for (const auto& c : m.top.subcommands) {
    if (c.name == "help") continue;
    out += "        " + c.name + ") " + function_name(c.path) + " && ret=0 ;;\n";
  }
  return out;
}

std::string help_inner(const Model& m) {
  std::string out;
  for (const auto& c : m.top.subcommands) {
    if (c.subcommands.empty()) continue;
    std::string names;
    for (const auto& s : c.subcommands) names += " " + s.name;
    out += "              " + c.name + ") _values '" + c.name + " subcommand'" + names +
           " && ret=0 ;;\n";
  }
  return out;
}

}  // namespace

std::string zsh_completion(const Model& m, const std::string& text) {
  return fill_template(text, [&](const std::string& name, const std::string&) -> std::string {
    if (name == "SUBCOMMANDS") return subcommand_list(m);
    if (name == "FUNCTIONS") return functions(m);
    if (name == "GLOBAL_SPECS") return global_specs(m);
    if (name == "DISPATCH") return dispatch(m);
    if (name == "HELP_INNER") return help_inner(m);
    throw std::runtime_error("zsh template: unknown @" + name + "@");
  });
}

}  // namespace rlock::docgen
