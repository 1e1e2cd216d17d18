#include "cli/console.hpp"

#include "cli/stdout_writer.hpp"
#include "util/error.hpp"
#include "util/one_line.hpp"

namespace rlock::cli {

// Data written by other clients may hold bytes that are not UTF-8 (rlock itself refuses
// such names and owners): they print as U+FFFD rather than failing the whole listing.
void Console::result(const Json& doc, const std::string& done) const {
  result_text(doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", done);
}

void Console::result_text(const std::string& text, const std::string& done) const {
  if (quiet_) return;
  int error = 0;
  write_stdout(text, &error);
  if (error != 0)
    throw Error(kExitIoError, stdout_failure(error) + (done.empty() ? "" : "; " + done));
}

void Console::notice(const std::string& line) const {
  if (!quiet_) print_diagnostic(line);
}

void Console::warning(const std::string& line) const { print_diagnostic(line); }

void Console::explain(const std::string& line) const {
  if (verbose_) print_diagnostic(line);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace rlock::cli
