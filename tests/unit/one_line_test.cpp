#include "util/one_line.hpp"

#include <doctest/doctest.h>

#include <string>

using rlock::one_line;

TEST_CASE("one_line escapes what could forge a line or a terminal escape") {
  struct Case {
    std::string in;
    std::string out;
  } cases[] = {
      {"plain text: 1/2 \\ ok", "plain text: 1/2 \\ ok"},
      {"x\nrlock: lock released\x1b[2K", "x\\nrlock: lock released\\x1b[2K"},
      {"a\rb\tc", "a\\rb\\tc"},
      {std::string("nul\0byte", 8), "nul\\x00byte"},
      {"del\x7f", "del\\x7f"},
      {"caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"},  // UTF-8 passes
      {"csi\xc2\x9b"
       "31m",
       "csi\\u009b31m"},        // C1 control
      {"raw\x9b", "raw\\x9b"},  // not UTF-8
      {"\xff\xfe", "\\xff\\xfe"},
      {"over\xc0\xaf", "over\\xc0\\xaf"},         // overlong '/'
      {"sur\xed\xa0\x80", "sur\\xed\\xa0\\x80"},  // surrogate
      {"cut\xe2\x9c", "cut\\xe2\\x9c"},           // truncated
      {"ls\xe2\x80\xa8x", "ls\\u2028x"},          // line separator
  };
  for (const auto& c : cases) {
    CAPTURE(c.in);
    CHECK(one_line(c.in) == c.out);
  }
}

TEST_CASE("one_line output never holds a control byte") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (unsigned char c : one_line(all)) CHECK((c >= 0x20 && c != 0x7f));
}
