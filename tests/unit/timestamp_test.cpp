#include "util/timestamp.hpp"

#include <doctest/doctest.h>

#include <string>

#include "util/error.hpp"

using rlock::base64;
using rlock::format_timestamp_ms;
using rlock::parse_timestamp;

TEST_CASE("--at times: RFC 3339 with Z or an offset, Unix seconds with a fraction") {
  const long long kAt = 1795341600000LL;  // 2026-11-22T10:00:00Z
  struct Case {
    const char* text;
    long long ms;
  } cases[] = {
      {"2026-11-22T10:00:00Z", kAt},
      {"2026-11-22T10:00:00z", kAt},
      {"2026-11-22 10:00:00Z", kAt},
      {"2026-11-22T12:00:00+02:00", kAt},
      {"2026-11-22T08:30:00-01:30", kAt},
      {"2026-11-22T10:00:00.5Z", kAt + 500},
      {"2026-11-22T10:00:00.123456789Z", kAt + 123},
      {"2024-02-29T00:00:00Z", 1709164800000LL},
      {"1970-01-01T00:00:00Z", 0},
      {"1795341600", kAt},
      {"1795341600.25", kAt + 250},
      {"0", 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    CHECK(parse_timestamp(c.text, "--at") == c.ms);
  }
}

TEST_CASE("--at refuses what is not a time") {
  for (const char* text : {"", "tomorrow", "2026-11-22T10:00:00", "2026-11-22",
                           "2026-02-30T10:00:00Z", "2026-13-01T00:00:00Z", "2026-11-22T24:00:00Z",
                           "2026-11-22T10:00:00+2:00", "1969-12-31T23:59:59Z", "-5", "1.", "1e9",
                           "99999999999999999999", " 1795341600", "2026-11-22T10:00:00Zjunk"}) {
    CAPTURE(text);
    CHECK_THROWS_AS(parse_timestamp(text, "--at"), rlock::UsageError);
  }
}

TEST_CASE("base64 of bytes, with padding") {
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foobar") == "Zm9vYmFy");
  CHECK(base64(std::string("\xff\x00\x80", 3)) == "/wCA");
}

TEST_CASE("Unix ms as RFC 3339 UTC with milliseconds, as parse_timestamp reads it back") {
  CHECK(format_timestamp_ms(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_timestamp_ms(1795341600250) == "2026-11-22T10:00:00.250Z");
  CHECK(format_timestamp_ms(951782400999) == "2000-02-29T00:00:00.999Z");
  CHECK(format_timestamp_ms(253402300799999) == "9999-12-31T23:59:59.999Z");
  for (long long ms : {1LL, 86399999LL, 1796237326416LL, 4102444800000LL}) {
    CAPTURE(ms);
    CHECK(parse_timestamp(format_timestamp_ms(ms), "t") == ms);
  }
}
