#include "cli/console.hpp"

#include <cstdio>

namespace rlock::cli {

void Console::result(const Json& doc) const { result_text(doc.dump() + "\n"); }

void Console::result_text(const std::string& text) const {
  if (quiet_) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void Console::notice(const std::string& line) const {
  if (!quiet_) std::fprintf(stderr, "rlock: %s\n", line.c_str());
}

void Console::explain(const std::string& line) const {
  if (verbose_) std::fprintf(stderr, "rlock: %s\n", line.c_str());
}

}  // namespace rlock::cli
