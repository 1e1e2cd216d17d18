#include "util/duration.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "util/error.hpp"

using rlock::Millis;
using rlock::parse_duration;

TEST_CASE("durations parse like flock -w and Go-style units") {
  struct Case {
    const char* text;
    long long ms;
  } cases[] = {
      {"250ms", 250},
      {"30s", 30'000},
      {"5m", 300'000},
      {"2h", 7'200'000},
      {"1d", 86'400'000},
      {"10", 10'000},
      {"0.5", 500},
      {"0", 0},
      {"1.5s", 1500},
      {"0ms", 0},
      {"1h30m", 5'400'000},
      {"2m30s", 150'000},
      {"1d2h", 93'600'000},
      {"1m0.5s", 60'500},
      {"1s250ms", 1250},
      {"36500d", 36'500LL * 86'400'000},
      // flock -w takes strtod's numbers: a bare number of seconds in exponent notation
      {"1e-1", 100},
      {"2.5E+1", 25'000},
      {"1e3", 1'000'000},
      {"5e-4", 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_duration(c.text, "--wait") == Millis(c.ms));
  }
}

TEST_CASE("bad durations are usage errors naming the flag") {
  const std::string cases[] = {"10x",
                               "-5s",
                               "",
                               "s",
                               "ms",
                               "1.2.3s",
                               "5 s",
                               "99999999999999999999d",
                               "1e",
                               "1e+",
                               "e3",
                               "1e1000",
                               "1e400",
                               "1.5e2s",
                               "1e-1s",
                               "-1e1",
                               "1e1.5",
                               "+5s",
                               "106753d",
                               "200000d",
                               "36501d",
                               "inf",
                               "1h30",
                               "30m1h",
                               "1m1m",
                               "1h 30m",
                               "1.5.h",
                               "nan",
                               "infinity",
                               "0x10",
                               "1d-1h",
                               "10S",
                               std::string(400, '9')};
  for (const auto& text : cases) {
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

TEST_CASE("inf and infinity wait forever (the longest duration) only where allowed") {
  CHECK(parse_duration("inf", "--wait", true) == rlock::kMaxDuration);
  CHECK(parse_duration("infinity", "--wait", true) == rlock::kMaxDuration);
  CHECK(parse_duration("5s", "--wait", true) == Millis(5000));
  CHECK_THROWS_AS(parse_duration("", "--wait", true), rlock::UsageError);
  CHECK_THROWS_AS(parse_duration("-inf", "--wait", true), rlock::UsageError);
}

TEST_CASE("the longest duration fits the monotonic clock twice over") {
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  auto limit = std::chrono::steady_clock::duration::max();
  CHECK(now + 2 * std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      rlock::kMaxDuration) <
        limit);
}

TEST_CASE("durations format for people") {
  CHECK(rlock::format_duration(Millis(850)) == "850ms");
  CHECK(rlock::format_duration(Millis(29'500)) == "29.5s");
  CHECK(rlock::format_duration(Millis(750'000)) == "12m30s");
  CHECK(rlock::format_duration(Millis(7'500'000)) == "2h5m");
  CHECK(rlock::format_duration(Millis(93'600'000)) == "1d2h");
}
