#include <doctest/doctest.h>

#include <string>

#include "prim/key_layout.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

TEST_CASE("names: non-empty, at most 512 bytes, no control characters") {
  CHECK_NOTHROW(rlock::validate_name("deploy-prod"));
  CHECK_NOTHROW(rlock::validate_name(std::string(512, 'x')));
  CHECK_NOTHROW(rlock::validate_name("ünïcode name {with} braces*"));
  const std::string bad[] = {"", std::string(513, 'x'), "a\x01z", "tab\there", "nl\n", "del\x7f"};
  for (const auto& name : bad) {
    CAPTURE(name);
    CHECK_THROWS_AS(rlock::validate_name(name), rlock::UsageError);
  }
}

TEST_CASE("key layout shares the {NAME} hash tag and round-trips names") {
  rlock::prim::KeyLayout layout("rlock:");
  CHECK(layout.lock_key("a") == "rlock:lock:{a}");
  CHECK(layout.fence_key("a") == "rlock:lock:{a}:fence");
  CHECK(layout.lock_channel("a") == "rlock:chan:{a}:lock");
  CHECK(layout.waiters_key("a") == "rlock:lock:{a}:waiters");
  CHECK(layout.grant_channel("a", "h:1:ff") == "rlock:chan:{a}:lock:h:1:ff");
  CHECK(layout.lock_name("rlock:lock:{deploy}") == std::optional<std::string>("deploy"));
  CHECK_FALSE(layout.lock_name("rlock:lock:{deploy}:fence"));
  CHECK_FALSE(layout.lock_name("other:lock:{deploy}"));
  rlock::prim::KeyLayout odd("app*[1]:");
  CHECK(odd.lock_key_pattern("dep*") == "app\\*\\[1\\]:lock:{dep*}");
}
