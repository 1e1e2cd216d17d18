// The text exposition format's label values and float syntax (inspect/prometheus.hpp).
#include "inspect/prometheus.hpp"

#include <doctest/doctest.h>

namespace rlock::inspect {

TEST_CASE("prometheus label values escape backslash, double quote and newline only") {
  struct Case {
    std::string raw, escaped;
  };
  const Case cases[] = {
      {"deploy-prod", "deploy-prod"},
      {"we\"ird", "we\\\"ird"},
      {"back\\slash", "back\\\\slash"},
      {"two\nlines", "two\\nlines"},
      {"tab\there", "tab\there"},
      {"caf\xC3\xA9", "caf\xC3\xA9"},
      {"bad\xFFutf8", "bad\xEF\xBF\xBDutf8"},
      {"cut\xE2\x82", "cut\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"overlong\xC0\xAF", "overlong\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"surrogate\xED\xA0\x80", "surrogate\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"", ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.raw);
    CHECK(prometheus_label_value(c.raw) == c.escaped);
  }
}

TEST_CASE("prometheus seconds from milliseconds") {
  CHECK(prometheus_seconds(0) == "0");
  CHECK(prometheus_seconds(1) == "0.001");
  CHECK(prometheus_seconds(29500) == "29.5");
  CHECK(prometheus_seconds(12000) == "12");
  CHECK(prometheus_seconds(1795341600123) == "1795341600.123");
  CHECK(prometheus_seconds(-1500) == "-1.5");
}

}  // namespace rlock::inspect
