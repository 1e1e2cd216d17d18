#include "util/name.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "prim/key_layout.hpp"
#include "util/error.hpp"

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
  CHECK(odd.lock_key_pattern("dep*") == "app\\*\\[1\\]:lock*:{dep*}");
}

namespace {

// CRC16/XMODEM, as Redis Cluster computes it.
unsigned crc16(std::string_view s) {
  unsigned crc = 0;
  for (unsigned char c : s) {
    crc ^= static_cast<unsigned>(c) << 8;
    for (int i = 0; i < 8; ++i)
      crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

// The cluster slot of a key: its hash tag (first '{' .. next '}', if non-empty) or all of it.
unsigned slot(std::string_view key) {
  size_t open = key.find('{');
  if (open != std::string_view::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) % 16384;
}

}  // namespace

TEST_CASE("the slot function agrees with Redis's documented examples") {
  CHECK(crc16("123456789") == 0x31c3);
  CHECK(slot("{user1000}.following") == slot("{user1000}.followers"));
  CHECK(slot("foo{}{bar}") == crc16("foo{}{bar}") % 16384);
}

TEST_CASE(
    "whatever the name, all keys and channels of one lock share one slot and names never collide") {
  const std::string names[] = {"}x", "}{",   "{a}",   "a{b", "%7D",
                               "%",  "%%7B", "-dash", "ü{}", "plain"};
  std::set<std::string> seen;
  for (const char* prefix : {"rlock:", "", "app:[x]*:"}) {
    rlock::prim::KeyLayout layout(prefix);
    for (const auto& name : names) {
      CAPTURE(prefix);
      CAPTURE(name);
      const std::string key = layout.lock_key(name);
      const unsigned s = slot(key);
      for (const auto& other :
           {layout.fence_key(name), layout.waiters_key(name), layout.timeouts_key(name),
            layout.grant_key(name), layout.exec_key(name), layout.request_key(name, "ab12"),
            layout.lock_channel(name), layout.grant_channel(name, "ab12"), layout.sem_key(name),
            layout.sem_config_key(name), layout.sem_holders_key(name), layout.sem_waiters_key(name),
            layout.sem_timeouts_key(name), layout.sem_grants_key(name),
            layout.sem_request_key(name, "ab12"), layout.sem_channel(name),
            layout.sem_grant_channel(name, "ab12")}) {
        CHECK(slot(other) == s);
      }
      CHECK(layout.lock_name(key) == std::optional<std::string>(name));
      CHECK(seen.insert(key).second);
    }
  }
}

TEST_CASE("a prefix with braces is refused; an empty prefix is allowed") {
  CHECK_THROWS_AS(rlock::prim::KeyLayout("{}"), rlock::UsageError);
  CHECK_THROWS_AS(rlock::prim::KeyLayout("a}b:"), rlock::UsageError);
  CHECK(rlock::prim::KeyLayout("").lock_key("x") == "lock:{x}");
  CHECK(rlock::prim::KeyLayout().sem_key("x") == "rlock:sem:{x}");
  CHECK(rlock::prim::KeyLayout().sem_config_key("x") == "rlock:sem:{x}:cfg");
  CHECK(rlock::prim::KeyLayout().sem_channel("x") == "rlock:chan:{x}:sem");
}

TEST_CASE("names and owners must be valid UTF-8") {
  for (const std::string bad : {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(rlock::validate_name(bad), rlock::UsageError);
    CHECK_THROWS_AS(rlock::validate_owner(bad), rlock::UsageError);
  }
  CHECK_NOTHROW(rlock::validate_owner("hôst:12:ab\xf0\x9f\x94\x92"));
}

TEST_CASE("notes: 1 to 200 bytes of UTF-8 without C0, DEL or C1 controls") {
  CHECK_NOTHROW(rlock::validate_note("frozen for the release, ask #ops"));
  CHECK_NOTHROW(rlock::validate_note(std::string(200, 'x')));
  CHECK_NOTHROW(
      rlock::validate_note("caf\xc3\xa9 \xf0\x9f\x94\x92 \xc2\xa0"));  // U+00A0 is no control
  for (const std::string& bad :
       {std::string(), std::string(201, 'x'), std::string("a\nb"), std::string("\x1b[2J"),
        std::string("del\x7f"), std::string("nel\xc2\x85"), std::string("csi\xc2\x9b"),
        std::string("\xff"), std::string("a\0b", 3)}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(rlock::validate_note(bad), rlock::UsageError);
  }
}
