#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/command.hpp"
#include "cli/flag_options.hpp"
#include "cli/full_app.hpp"
#include "cli/raw_words.hpp"
#include "cli/stdout_writer.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

// A command-running subcommand's command is everything after the first `--`: CLI11 never
// sees it, so the command's own flags can't be mistaken for rlock's.
struct SplitArgs {
  std::vector<std::string> rlock;
  std::vector<std::string> command;
  bool has_dashes = false;
};

const Subcommand* find_subcommand(const std::string& name) {
  for (const auto& s : subcommands()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::vector<std::string> subcommand_names() {
  std::vector<std::string> names;
  for (const auto& s : subcommands()) names.emplace_back(s.name);
  return names;
}

// "a, b, c or d"
std::string listed(const std::vector<std::string>& names, const char* last_joiner) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last_joiner : ", ";
    out += names[i];
  }
  return out;
}

SplitArgs split_args(int argc, char** argv) {
  SplitArgs out;
  std::vector<std::string> all(argv + 1, argv + argc);
  auto dashes = std::find(all.begin(), all.end(), "--");
  bool runs_command = false;
  for (auto word = all.begin(); word != dashes && !runs_command; ++word) {
    const Subcommand* sub = find_subcommand(*word);
    if (!sub || !sub->command_usage) continue;
    // "rlock sem exec [OPTIONS] ...": only that subcommand of sem runs a command, and
    // `rlock sem status -- -NAME` keeps its `--` for CLI11.
    std::string_view usage = sub->command_usage;
    size_t after = std::string_view("rlock ").size() + std::string_view(sub->name).size() + 1;
    std::string_view next = after < usage.size() ? usage.substr(after) : std::string_view();
    next = next.substr(0, next.find(' '));
    runs_command = next.empty() || next[0] == '[' || std::find(word + 1, dashes, next) != dashes;
  }
  if (dashes != all.end() && runs_command) {
    // `-- -NAME -- CMD`: a name that starts with '-' comes after a `--` of its own (no
    // command starts with '-'), and the command after the second `--`.
    bool quoted_name =
        dashes + 2 < all.end() && (dashes + 1)->rfind('-', 0) == 0 && *(dashes + 2) == "--";
    auto second = quoted_name ? dashes + 2 : all.end();
    auto command_start = quoted_name ? second : dashes;
    out.has_dashes = true;
    out.command.assign(command_start + 1, all.end());
    all.erase(command_start, all.end());
  }
  out.rlock = std::move(all);
  return out;
}

// Global options that take a value, so that value is not taken for a subcommand name.
bool takes_value(const std::string& arg) {
  for (const Flag& f : flag_table()) {
    if (f.global() && !f.value.empty() && f.named(arg)) return true;
  }
  return false;
}

// The subcommand whose options must be defined: the first word that is not an option or a
// global option's value; for `help X`, X. Empty when unclear: then all are defined.
std::string chosen_subcommand(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (takes_value(args[i])) {
      ++i;
    } else if (!args[i].empty() && args[i][0] != '-') {
      if (args[i] != "help") return args[i];
      return i + 1 < args.size() ? args[i + 1] : std::string();
    }
  }
  return {};
}

// flock's -w, --wait and --timeout SECS all wait for the lock; rlock's global --timeout,
// which may follow the subcommand, bounds each Redis command. After lock or exec, where a
// flock user writes it, taking either meaning silently would be wrong for the other
// reader: refused, pointing at both spellings.
void refuse_flock_timeout(const std::vector<std::string>& args, const std::string& sub) {
  if (sub != "lock" && sub != "exec") return;
  size_t i = 0;
  while (i < args.size() && (args[i].empty() || args[i][0] == '-'))
    i += takes_value(args[i]) ? 2 : 1;
  if (i >= args.size() || args[i] != sub) return;
  for (++i; i < args.size() && args[i] != "--"; ++i) {
    const std::string& word = args[i];
    if (word != "--timeout" && word.rfind("--timeout=", 0) != 0) continue;
    std::string value = word.size() > 10 ? word.substr(10) : std::string();
    if (word == "--timeout" && i + 1 < args.size()) value = args[i + 1];
    if (value.empty() || value[0] == '-' || value.size() > 32) value = "DUR";
    throw UsageError(
        "--timeout after the subcommand is rlock's Redis command timeout; to wait "
        "for the lock as flock --timeout does, use --wait " +
        value + " (or put --timeout before the subcommand)");
  }
}

// Edit distance with adjacent transpositions (`exce` -> `exec` is 1).
size_t typo_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// " (did you mean 'X'?)" for the closest of `known` within two edits, or "".
std::string suggestion(const std::string& word, const std::vector<std::string>& known) {
  if (word.size() > 64) return {};  // nobody types that by mistake; keeps the table small
  std::string best;
  size_t best_distance = 3;
  for (const auto& k : known) {
    size_t dist = typo_distance(word, k);
    if (dist < best_distance && dist < k.size() / 2 + 1) {
      best = k;
      best_distance = dist;
    }
  }
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

// The long option names `--x` that `app` and its parents understand.
std::vector<std::string> long_options(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app; app = app->get_parent()) {
    for (const CLI::Option* o : app->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    }
  }
  return names;
}

std::string see_help(const std::string& subcommand) {
  return subcommand.empty() ? "; see rlock help" : "; see rlock help " + subcommand;
}

// How an unexpected word is quoted: a URL with userinfo (a forgotten --url) may hold a
// password, and messages never repeat one.
std::string quoted(const std::string& arg) {
  bool url_with_userinfo =
      arg.find("://") != std::string::npos && arg.find('@') != std::string::npos;
  return url_with_userinfo
             ? std::string("(a URL with userinfo, not repeated here; give it with --url)")
             : "'" + arg + "'";
}

// One line for an argument CLI11 did not expect: an unknown option or subcommand (with a
// suggestion) or a surplus positional. `parsed` is the subcommand entered, if any.
UsageError unexpected_argument(const std::string& arg, const CLI::App* parsed,
                               const CLI::App& top) {
  std::string sub = parsed ? parsed->get_name() : std::string();
  if (!arg.empty() && arg[0] == '-' && arg != "-") {
    std::string option = arg.substr(0, arg.find('='));
    std::string hint =
        option.rfind("--", 0) == 0 ? suggestion(option, long_options(parsed ? parsed : &top)) : "";
    return UsageError("unknown option '" + option + "'" + hint + see_help(sub));
  }
  if (!parsed) {
    std::vector<std::string> names = subcommand_names();
    names.emplace_back("help");
    return UsageError("unknown subcommand " + quoted(arg) + suggestion(arg, names) + see_help(""));
  }
  return UsageError("unexpected argument " + quoted(arg) + see_help(sub));
}

std::string overview(CLI::App& app) {
  return app.get_formatter()->make_help(&app, "rlock", CLI::AppFormatMode::Normal);
}

// Help is a result like any other: a failed write exits 74.
int print_text(const std::string& text) {
  int error = 0;
  write_stdout(text, &error);
  if (error != 0) throw Error(kExitIoError, stdout_failure(error));
  return 0;
}

// The subcommand of `parent` named `name`, or nullptr.
CLI::App* subcommand_of(CLI::App& parent, const std::string& name) {
  try {
    return parent.get_subcommand(name);
  } catch (const CLI::OptionNotFound&) {
    return nullptr;
  }
}

int print_help(CLI::App& app, const std::vector<std::string>& topic) {
  if (topic.empty() || topic[0] == "help") return print_text(overview(app));
  CLI::App* sub = subcommand_of(app, topic[0]);
  if (!sub) {
    throw UsageError("help: unknown subcommand '" + topic[0] + "'" +
                     suggestion(topic[0], subcommand_names()) + "; see rlock help");
  }
  std::string path = "rlock " + topic[0];
  if (topic.size() > 1) {
    std::vector<std::string> names;
    for (const CLI::App* s : sub->get_subcommands({})) names.push_back(s->get_name());
    CLI::App* inner = subcommand_of(*sub, topic[1]);
    if (!inner) {
      throw UsageError("help: " + topic[0] + " has no subcommand '" + topic[1] + "'" +
                       (names.empty() ? "" : suggestion(topic[1], names)) + "; see rlock help " +
                       topic[0]);
    }
    sub = inner;
    path += " " + topic[1];
  }
  return print_text(sub->get_formatter()->make_help(sub, path, CLI::AppFormatMode::Normal));
}

// `rlock` alone, or with global options only (`rlock -qv`): like every usage error, one
// line (main's), which names the subcommands; the overview is `rlock help`.
[[noreturn]] void missing_subcommand() {
  throw UsageError("missing subcommand (" + listed(subcommand_names(), ", ") +
                   " or help); see rlock help");
}

// Whether `parsed` (the subcommand entered, of table entry `entry`) runs a command after
// `--`: a subcommand with a command usage, or, when it has subcommands of its own (sem),
// the one of them named exec.
bool runs_command(const CLI::App* parsed, const Subcommand* entry) {
  if (!entry || !entry->command_usage) return false;
  if (parsed->get_subcommands({}).empty()) return true;
  auto entered = parsed->get_subcommands();
  return !entered.empty() && entered.front()->get_name() == "exec";
}

// Whether the command is optional: its usage shows it in brackets, "[-- CMD [ARGS...]]"
// (delay-pop, which takes items without one).
bool command_optional(const Subcommand* entry) {
  return std::string_view(entry->command_usage).find("[-- ") != std::string_view::npos;
}

// The subcommand CLI11 entered, if any.
const CLI::App* parsed_subcommand(const std::vector<std::pair<CLI::App*, Runner>>& commands) {
  for (const auto& [sub, runner] : commands) {
    if (sub->parsed()) return sub;
  }
  return nullptr;
}

// The overview's text after the global options.
const char* overview_footer() {
  return "Durations: 250ms, 30s, 5m, 2h, 1d, compounds such as 1h30m, a bare number of seconds;\n"
         "at most 36500d. --wait inf waits forever.\n\n"
         "TLS: rediss://, rediss-sentinel://, rediss-cluster:// and rediss-quorum:// URLs verify\n"
         "the server's certificate and name; the --tls-* options are also RLOCK_TLS_CA_CERT,\n"
         "RLOCK_TLS_CA_DIR, RLOCK_TLS_CERT, RLOCK_TLS_KEY, RLOCK_TLS_INSECURE and the config\n"
         "file's tls_* keys.\n\n"
         "While a command waits with stderr on a terminal (and without -q), one status line\n"
         "shows who holds it, the place in the queue and the time left, redrawn in place and\n"
         "erased before the result, a notice or the job.\n\n"
         "Run 'rlock help SUBCOMMAND' for its options and examples; rlock(1) has the details.";
}

// What a command line CLI11 refused gets: --help and --version their text (0), anything
// else one UsageError naming the word at fault.
int answer_parse_error(const CLI::ParseError& e, CLI::App& app,
                       const std::vector<std::pair<CLI::App*, Runner>>& commands,
                       const RawWords& raw, const SplitArgs& args) {
  if (e.get_exit_code() == 0) {  // --help, --version: CLI11 prints them on std::cout
    std::ostringstream text;
    app.exit(e, text, text);
    return print_text(text.str());
  }
  const CLI::App* parsed = parsed_subcommand(commands);
  const Subcommand* entry = parsed ? find_subcommand(parsed->get_name()) : nullptr;
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // remaining() lists the unexpected words in command-line order (the error's own text
    // joins them last-first).
    std::vector<std::string> extras = app.remaining(true);
    for (auto& word : extras) word = raw.restore(word);
    // A word where the command would go is a command without its `--`; an unknown
    // option is named as such.
    bool option = !extras.empty() && extras.front().size() > 1 && extras.front()[0] == '-';
    if (parsed && runs_command(parsed, entry) && !args.has_dashes && !option) {
      throw UsageError(std::string(entry->name) + ": missing '--' before the command (" +
                       entry->command_usage + ")");
    }
    if (!extras.empty()) throw unexpected_argument(extras.front(), parsed, app);
  }
  throw UsageError(raw.restore(e.what()) + see_help(parsed ? parsed->get_name() : std::string()));
}

// Runs the subcommand CLI11 entered, or help.
int run_chosen(CLI::App& app, const std::vector<std::pair<CLI::App*, Runner>>& commands,
               const std::vector<std::string>& help_topic, const SplitArgs& args,
               const GlobalFlags& globals) {
  if (app.got_subcommand("help")) return print_help(app, help_topic);
  for (const auto& [sub, runner] : commands) {
    if (!sub->parsed()) continue;
    refuse_flock_timeout(args.rlock, sub->get_name());
    const Subcommand* entry = find_subcommand(sub->get_name());
    // exec -c 'CMD' gives its command as an option (checked by exec itself).
    const CLI::Option* shell_command = sub->get_option_no_throw("--command");
    bool command_as_option = shell_command && shell_command->count() > 0;
    if (runs_command(sub, entry) && args.command.empty() && !command_as_option &&
        (args.has_dashes || !command_optional(entry))) {
      throw UsageError(std::string(entry->name) +
                       (args.has_dashes ? ": missing command after '--' ("
                                        : ": missing '--' before the command (") +
                       entry->command_usage + ")");
    }
    // json and table fall back to JSON where a command has no table; no other command
    // can make the exposition format, and JSON where a scraper expects it fails unseen.
    if (globals.format == "prometheus" && sub->get_name() != "inspect") {
      throw UsageError("--format prometheus is for inspect only, not " + sub->get_name() +
                       see_help(sub->get_name()));
    }
    return runner.run(resolve_settings(globals));
  }
  missing_subcommand();
}

}  // namespace

// `help SUBCOMMAND [SUBSUBCOMMAND]`: `rlock help sem exec` as `rlock sem exec --help`.
void add_help_command(CLI::App& app, std::vector<std::string>& topic) {
  auto* help =
      app.add_subcommand("help", "Show this overview, or a subcommand's options and examples");
  add_table_option(*help, "subcommand", topic)->expected(0, 2);
}

int run(int argc, char** argv) {
  SplitArgs args = split_args(argc, argv);
  CLI::App app(
      "Locks, read-write locks, semaphores, countdown latches, rate limiters and delayed queues "
      "for shell jobs, cron and CI, held in Redis.",
      "rlock");
  add_help_and_version_flags(app);
  app.fallthrough();
  app.require_subcommand(0, 1);
  app.footer(overview_footer());
  GlobalFlags globals;
  add_global_flags(app, globals);
  std::string chosen = chosen_subcommand(args.rlock);
  // Only the chosen subcommand gets its options defined (CLI11 builds every option eagerly,
  // a measurable part of start-up); the others exist with their name and description for
  // the overview and for errors.
  bool known = find_subcommand(chosen) != nullptr;
  std::vector<std::pair<CLI::App*, Runner>> commands;
  for (const auto& e : subcommands()) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
    if (!known || chosen == e.name) commands.emplace_back(sub, e.define(*sub, args.command));
  }
  std::vector<std::string> help_topic;
  add_help_command(app, help_topic);

  RawWords raw;
  std::vector<std::string> words = raw.stand_in(args.rlock);
  raw.restore_options(app);
  // CLI11's parse(vector&) takes the arguments last-first: it pops them off the back.
  std::vector<std::string> reversed(words.rbegin(), words.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return answer_parse_error(e, app, commands, raw, args);
  }
  return run_chosen(app, commands, help_topic, args, globals);
}

}  // namespace rlock::cli
