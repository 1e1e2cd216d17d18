// A frame of `inspect --watch` on a terminal (cli/watch_screen.hpp): what fits the
// terminal's height and width, and the sequences that draw it in place.
#include "cli/watch_screen.hpp"

#include <doctest/doctest.h>

namespace rlock::cli {

TEST_CASE("screen_frame: the rows that fit the height, then how many more there are") {
  const std::vector<std::string> top = {"header", "TYPE NAME"};
  const std::vector<std::string> rows = {"r1", "r2", "r3", "r4"};
  struct Case {
    size_t rows;
    std::vector<std::string> shown;
  };
  const Case cases[] = {
      {10, {"header", "TYPE NAME", "r1", "r2", "r3", "r4"}},
      {6, {"header", "TYPE NAME", "r1", "r2", "r3", "r4"}},  // exactly
      {5, {"header", "TYPE NAME", "r1", "r2", "… 2 more"}},
      {3, {"header", "TYPE NAME", "… 4 more"}},
      {2, {"header", "TYPE NAME"}},
      {1, {"header"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.rows);
    std::string expected = "\033[H";
    for (size_t i = 0; i < c.shown.size(); ++i)
      expected += c.shown[i] + "\033[K" + (i + 1 < c.shown.size() ? "\r\n" : "");
    CHECK(screen_frame(top, rows, {c.rows, 80}) == expected + "\033[J");
  }
}

TEST_CASE("screen_frame: every line cut one column short of the width") {
  std::string frame = screen_frame({"0123456789"}, {"abcdefghij", "ab"}, {5, 6});
  CHECK(frame == "\033[H01234\033[K\r\nabcde\033[K\r\nab\033[K\033[J");
}

}  // namespace rlock::cli
