#include "redis/quorum_rule.hpp"

#include <doctest/doctest.h>

#include <string>

namespace rlock::redis {
namespace {

constexpr const char* kNote = " (the quorum's own keys rlock:quorum:*, the same whatever --prefix)";

TEST_CASE("member check refusal: the key refusal is named whatever the server's wording") {
  struct Case {
    const char* refusal;
    bool request_refused;
    const char* note;
  };
  const Case cases[] = {
      // Redis 7.0
      {"NOPERM this user has no permissions to access one of the keys used as arguments", false,
       kNote},
      // Redis 8.0, Valkey 8.1
      {"NOPERM No permissions to access a key", false, kNote},
      // the request's own script refused too: not the check's keys in particular
      {"NOPERM No permissions to access a key", true, ""},
      {"NOPERM this user has no permissions to run the 'evalsha' command", true, ""},
      // the check's own refusals name what they need
      {"NOPERM rlock needs INFO for the quorum restart rule", false, ""},
      {"NOPERM rlock needs GET on rlock:quorum:longest-lease for the quorum restart rule", false,
       ""},
      {"ERR something else", false, ""},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.refusal));
    CHECK(member_check_refusal_note(c.refusal, c.request_refused) == c.note);
  }
}

}  // namespace
}  // namespace rlock::redis
