#pragma once

#include <span>
#include <string>
#include <string_view>

namespace rlock::cli {

// What a shell offers for a flag's value or a positional argument.
enum class Completion {
  kNone,         // a switch, or a value nothing sensible can be offered for
  kFile,         // a path
  kDirectory,    // a directory
  kChoices,      // one of the words in `choices`, no other
  kSuggestions,  // the words in `choices` as examples; any other value is fine too
  kCommaList,    // a comma-separated list of the words in `choices`
  kPrefix,       // the words in `choices` begin the value (URL schemes): no space after
  kLockName,     // a lock held now, asked of the server with `rlock inspect`
  kSubcommand,   // one of rlock's subcommands
};

// One flag or positional argument: the one place its names, value and text are written.
// The CLI11 registration (cli/flag_options.hpp) takes its names, value name and help from
// here; rlock(1)'s OPTIONS and the bash, zsh and fish completions are generated from it
// (tools/docgen) into the checked-in man/rlock.1 and completions/, which a test compares
// with a fresh generation.
struct Flag {
  // Where it is accepted: command paths separated by commas ("lock,exec,sem acquire");
  // empty for a global option, which every subcommand accepts too.
  std::string_view commands;
  // CLI11's spelling: "-w,--wait"; for a positional argument its name ("name").
  std::string_view names;
  // The value's name ("DUR"); empty for a switch.
  std::string_view value;
  // One line: `rlock help`, and the descriptions zsh and fish show.
  std::string_view help;
  // The entry's text in rlock(1), in roff; empty: none (a positional, or a flag the
  // command's prose in the man page describes).
  std::string_view man = {};
  Completion completion = Completion::kNone;
  std::string_view choices = {};  // words for kChoices, kSuggestions, kCommaList, kPrefix
  // The value taken when it is not given, where one word says it ("30s"): `rlock help`
  // adds "(default 30s)" to the help line, rlock(1) a "Default:" sentence to the text.
  std::string_view default_value = {};
  // The environment variable and config file key that give its value when it is not given
  // (global options; cli/settings.cpp reads them by these names).
  std::string_view env = {};
  std::string_view config = {};
  bool repeatable = false;  // may be given more than once (each value adds one)

  bool positional() const { return !names.empty() && names.front() != '-'; }
  bool global() const { return commands.empty(); }
  // Whether `command` ("sem acquire") accepts it: a global option, or one of `commands`.
  bool accepted_by(std::string_view command) const;
  // Whether `name` ("--wait", "-w", "name") is one of its names.
  bool named(std::string_view name) const;
  // The first long name ("--wait"), else the first name.
  std::string_view long_name() const;
  // The help line with its default: what `rlock help` and the completions show.
  std::string help_line() const;
};

// Every flag, grouped by the subcommand that introduces it, in help order.
std::span<const Flag> flag_table();

// The entry of `command` ("" for the global options) named `name`. A name the table lacks
// is a programming error (the table test finds it): std::logic_error.
const Flag& flag_of(std::string_view command, std::string_view name);

// The parts of the table, one per file of cli/flags/.
std::span<const Flag> global_flags();
std::span<const Flag> lock_flags();
std::span<const Flag> exec_flags();
std::span<const Flag> elect_flags();
std::span<const Flag> sem_flags();
std::span<const Flag> inspect_flags();
std::span<const Flag> latch_flags();
std::span<const Flag> limit_flags();
std::span<const Flag> delay_flags();

}  // namespace rlock::cli
