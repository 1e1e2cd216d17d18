#include <doctest/doctest.h>

#include "util/duration.hpp"
#include "util/error.hpp"

using rlock::Millis;
using rlock::parse_duration;

TEST_CASE("durations parse like flock -w and Go-style units") {
  struct Case {
    const char* text;
    long long ms;
  } cases[] = {
      {"250ms", 250}, {"30s", 30'000}, {"5m", 300'000}, {"2h", 7'200'000}, {"1d", 86'400'000},
      {"10", 10'000}, {"0.5", 500},    {"0", 0},        {"1.5s", 1500},    {"0ms", 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_duration(c.text, "--wait") == Millis(c.ms));
  }
}

TEST_CASE("bad durations are usage errors naming the flag") {
  const char* cases[] = {"10x", "-5s", "", "s", "ms", "1.2.3s", "5 s", "99999999999999999999d", "1e3", "+5s"};
  for (const char* text : cases) {
    CAPTURE(text);
    try {
      parse_duration(text, "--lease");
      FAIL("accepted");
    } catch (const rlock::Error& e) {
      CHECK(e.exit_code() == rlock::kExitUsage);
      CHECK(std::string(e.what()).rfind("--lease: invalid duration", 0) == 0);
    }
  }
}

TEST_CASE("durations format for people") {
  CHECK(rlock::format_duration(Millis(850)) == "850ms");
  CHECK(rlock::format_duration(Millis(29'500)) == "29.5s");
  CHECK(rlock::format_duration(Millis(750'000)) == "12m30s");
  CHECK(rlock::format_duration(Millis(7'500'000)) == "2h5m");
}
