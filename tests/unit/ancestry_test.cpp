#include "cli/ancestry.hpp"

#include <doctest/doctest.h>

#include <string>

using rlock::cli::holds_for_job;
using rlock::cli::kMaxAncestors;
using rlock::cli::parse_holds;
using rlock::prim::AncestorHold;

TEST_CASE("RLOCK_HOLDS: a job's holds round-trip, owners with spaces and percent signs too") {
  std::string v = holds_for_job({{"0123456789abcdef", "ci"}}, {"fedcba9876543210", "a b%20c"});
  CHECK(v == "0123456789abcdef:ci fedcba9876543210:a%20b%2520c");
  auto holds = parse_holds(v);
  REQUIRE(holds.size() == 2);
  CHECK(holds[1].id == "fedcba9876543210");
  CHECK(holds[1].owner == "a b%20c");
}

TEST_CASE("RLOCK_HOLDS: entries rlock would not write are left out") {
  const struct {
    const char* value;
    size_t kept;
  } cases[] = {
      {"", 0},
      {"0123456789abcdef:ok", 1},
      {"0123456789ABCDEF:upper", 0},
      {"0123456789abcde:short", 0},
      {"0123456789abcdef:", 0},        // no owner
      {"0123456789abcdef:%41", 0},     // an escape rlock never writes
      {"0123456789abcdef:%2", 0},      // a cut escape
      {"0123456789abcdef:a\x01z", 0},  // a control character
      {"0123456789abcdef", 0},         // no owner at all
      {"  0123456789abcdef:x  junk 0123456789abcdef:y", 2},
  };
  for (const auto& c : cases) {
    CAPTURE(c.value);
    CHECK(parse_holds(c.value).size() == c.kept);
  }
}

TEST_CASE("RLOCK_HOLDS: the nearest holds are kept") {
  std::vector<AncestorHold> many;
  for (size_t i = 0; i < kMaxAncestors + 3; ++i)
    many.push_back({std::string(16, 'a'), "o" + std::to_string(i)});
  auto holds = parse_holds(holds_for_job(many, {std::string(16, 'b'), "last"}));
  REQUIRE(holds.size() == kMaxAncestors);
  CHECK(holds.back().owner == "last");
  CHECK(holds.front().owner == "o" + std::to_string(4));
}
