#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cli/settings.hpp"

namespace rlock::cli {

using Json = nlohmann::ordered_json;  // keeps fields in the documented order

// Where a subcommand's words go: the result as one JSON document on stdout, notices and
// -v explanations on stderr, each one line prefixed "rlock: " with control characters
// escaped (see one_line). -q silences all but errors and warnings.
class Console {
 public:
  explicit Console(const Settings& s) : quiet_(s.quiet), verbose_(s.verbose && !s.quiet) {}

  // A write that fails (full disk, closed pipe) throws exit 74 naming the error, and then
  // `done`: what the command did on the server that stands all the same, said so that the
  // user can undo it (empty: nothing to undo). Nothing is given back: the user decides.
  void result(const Json& doc, const std::string& done = {}) const;
  void result_text(const std::string& text, const std::string& done = {}) const;
  void notice(const std::string& line) const;
  void warning(const std::string& line) const;  // printed even with -q
  void explain(const std::string& line) const;  // only with -v
  bool verbose() const { return verbose_; }
  bool quiet() const { return quiet_; }

 private:
  bool quiet_;
  bool verbose_;
};

// `s` as one word for a POSIX shell: what a line that tells a command to run quotes.
std::string shell_quote(const std::string& s);

}  // namespace rlock::cli
