// The cut to the terminal's width of the waiting line and inspect --watch (cli/terminal.hpp).
#include <doctest/doctest.h>

#include "cli/terminal.hpp"

namespace rlock::cli {

TEST_CASE("fit_columns cuts to a width, counting a non-ASCII character as two, never mid-way") {
  struct Case {
    std::string text;
    size_t columns;
    std::string fitted;
  };
  const Case cases[] = {
      {"waiting for lock", 7, "waiting"},
      {"short", 80, "short"},
      {"caf\xC3\xA9!", 5, "caf\xC3\xA9"},  // é counts two
      {"caf\xC3\xA9!", 4, "caf"},          // é would not fit
      {"\xE2\x9C\x93\xE2\x9C\x93", 3, "\xE2\x9C\x93"},
      {"x", 0, ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(fit_columns(c.text, c.columns) == c.fitted);
  }
}

}  // namespace rlock::cli
