#include "cli/console.hpp"

#include <cstdio>

#include "util/one_line.hpp"

namespace rlock::cli {

// Data written by other clients may hold bytes that are not UTF-8 (rlock itself refuses
// such names and owners): they print as U+FFFD rather than failing the whole listing.
void Console::result(const Json& doc) const {
  result_text(doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

void Console::result_text(const std::string& text) const {
  if (quiet_) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void Console::notice(const std::string& line) const {
  if (!quiet_) print_diagnostic(line);
}

void Console::warning(const std::string& line) const { print_diagnostic(line); }

void Console::explain(const std::string& line) const {
  if (verbose_) print_diagnostic(line);
}

}  // namespace rlock::cli
