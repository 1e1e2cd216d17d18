#include "redis/slot.hpp"

#include <doctest/doctest.h>

#include <string>

#include "redis/slot_map.hpp"

using rlock::redis::crc16;
using rlock::redis::key_slot;
using rlock::redis::parse_redirect;
using rlock::redis::Redirect;

TEST_CASE("crc16 is CRC16-CCITT XMODEM") {
  struct Case {
    std::string data;
    uint16_t crc;
  } cases[] = {
      {"", 0x0000},
      {"123456789", 0x31C3},  // the check value of XMODEM (and of the Redis Cluster spec)
      {"A", 0x58E5},
      {std::string("\0\0", 2), 0x0000},
      {"\xff", 0x1EF0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.data);
    CHECK(crc16(c.data) == c.crc);
  }
}

TEST_CASE("key_slot follows the hash tag rules of Redis Cluster") {
  // Slots from CLUSTER KEYSLOT of a Redis 7.0.15 server (also checked live by the
  // integration test "the slot of every key is the one CLUSTER KEYSLOT gives").
  struct Case {
    std::string key;
    int slot;
  } cases[] = {
      {"foo", 12182},
      {"bar", 5061},
      {"123456789", 0x31C3},
      {"{user1000}.following", 3443},
      {"{user1000}.followers", 3443},
      {"user1000", 3443},
      {"foo{}{bar}", key_slot("foo{}{bar}")},  // empty first tag: the whole key
      {"foo{{bar}}zap", key_slot("{bar")},     // tag is "{bar"
      {"foo{bar}{zap}", key_slot("bar")},      // the first tag only
      {"rlock:lock:{deploy}", key_slot("deploy")},
      {"rlock:lock:{deploy}:fence", key_slot("deploy")},
      {"{", key_slot("{")},
      {"}{", key_slot("}{")},
  };
  for (const auto& c : cases) {
    CAPTURE(c.key);
    CHECK(key_slot(c.key) == c.slot);
    CHECK(key_slot(c.key) >= 0);
    CHECK(key_slot(c.key) < rlock::redis::kSlotCount);
  }
  CHECK(key_slot("foo{}{bar}") == static_cast<int>(crc16("foo{}{bar}") & 16383));
  CHECK(key_slot("foo{{bar}}zap") == static_cast<int>(crc16("{bar") & 16383));
}

TEST_CASE("MOVED and ASK replies") {
  struct Case {
    const char* error;
    bool redirect;
    Redirect::Kind kind;
    int slot;
    const char* host;
    int port;
  } cases[] = {
      {"MOVED 3999 127.0.0.1:6381", true, Redirect::Kind::kMoved, 3999, "127.0.0.1", 6381},
      {"ASK 0 10.0.0.2:7000", true, Redirect::Kind::kAsk, 0, "10.0.0.2", 7000},
      {"MOVED 16383 :7001", true, Redirect::Kind::kMoved, 16383, "asked", 7001},
      {"MOVED 5 ::1:7002", true, Redirect::Kind::kMoved, 5, "::1", 7002},
      {"MOVED 5 [::1]:7002", true, Redirect::Kind::kMoved, 5, "::1", 7002},
      {"MOVED 16384 h:1", false, {}, 0, "", 0},
      {"MOVED 1 h:0", false, {}, 0, "", 0},
      {"MOVED x h:1", false, {}, 0, "", 0},
      {"MOVED 1", false, {}, 0, "", 0},
      {"ERR MOVED 1 h:1", false, {}, 0, "", 0},
      {"TRYAGAIN Multiple keys request during rehashing of slot", false, {}, 0, "", 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.error);
    auto r = parse_redirect(c.error, "asked");
    REQUIRE(r.has_value() == c.redirect);
    if (!r) continue;
    CHECK(r->kind == c.kind);
    CHECK(r->slot == c.slot);
    CHECK(r->to.host == c.host);
    CHECK(r->to.port == c.port);
  }
}
