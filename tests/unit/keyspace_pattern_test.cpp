// Which notify-keyspace-events settings tell `inspect --watch` of rlock's changes, and the
// channel pattern it subscribes to (redis/keyspace_events.hpp).
#include <doctest/doctest.h>

#include "redis/keyspace_events.hpp"

namespace rlock::redis {

TEST_CASE("keyspace_pattern: keyspace channels where enabled, else keyevent ones, else none") {
  struct Case {
    const char* flags;
    int db;
    const char* prefix;
    std::optional<std::string> pattern;
  };
  const Case cases[] = {
      {"KEA", 0, "rlock:", "__keyspace@0__:rlock:*"},
      {"AK", 3, "rlock:", "__keyspace@3__:rlock:*"},
      {"Kh", 0, "rlock:", "__keyspace@0__:rlock:*"},
      {"Kgx", 0, "", "__keyspace@0__:*"},
      {"Ex", 0, "rlock:", "__keyevent@0__:*"},  // the key comes as the payload
      {"K$", 0, "a*b?[c]\\:", "__keyspace@0__:a\\*b\\?\\[c\\]\\\\:*"},
      {"", 0, "rlock:", std::nullopt},
      {"KE", 0, "rlock:", std::nullopt},  // no class of event
      {"Km", 0, "rlock:", std::nullopt},  // key misses: nothing rlock writes
      {"A", 0, "rlock:", std::nullopt},   // classes, but no channel
  };
  for (const auto& c : cases) {
    CAPTURE(c.flags);
    CAPTURE(c.prefix);
    CHECK(keyspace_pattern(c.flags, c.db, c.prefix) == c.pattern);
  }
}

}  // namespace rlock::redis
