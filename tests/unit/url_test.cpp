#include "redis/url.hpp"

#include <doctest/doctest.h>

#include "util/error.hpp"

using rlock::redis::Endpoint;
using rlock::redis::parse_url;

TEST_CASE("redis:// URLs") {
  struct Case {
    const char* url;
    const char* host;
    int port;
    int db;
    const char* user;
    const char* password;
  } cases[] = {
      {"redis://127.0.0.1:6380", "127.0.0.1", 6380, 0, "", ""},
      {"redis://localhost", "localhost", 6379, 0, "", ""},
      {"redis://h:1/3", "h", 1, 3, "", ""},
      {"redis://:secret@h:7000/2", "h", 7000, 2, "", "secret"},
      {"redis://alice:p%40ss@h", "h", 6379, 0, "alice", "p@ss"},
      {"redis://alice@h", "h", 6379, 0, "alice", ""},
      {"redis://u:p/ss@h:1/2", "h", 1, 2, "u", "p/ss"},
      {"redis://u:p@ss@h", "h", 6379, 0, "u", "p@ss"},
      {"redis://:Gk5nRt8/Yp2W@host:6379", "host", 6379, 0, "", "Gk5nRt8/Yp2W"},
      {"redis://[::1]:6390", "::1", 6390, 0, "", ""},
      {"redis://h/", "h", 6379, 0, "", ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.url);
    Endpoint ep = parse_url(c.url);
    CHECK(ep.kind == Endpoint::Kind::kTcp);
    CHECK(ep.host == c.host);
    CHECK(ep.port == c.port);
    CHECK(ep.db == c.db);
    CHECK(ep.user == c.user);
    CHECK(ep.password == c.password);
  }
}

TEST_CASE("unix:// URLs") {
  Endpoint ep = parse_url("unix:///run/redis/redis.sock?db=4");
  CHECK(ep.kind == Endpoint::Kind::kUnix);
  CHECK(ep.path == "/run/redis/redis.sock");
  CHECK(ep.db == 4);
  Endpoint with_auth = parse_url("unix://u:pw@/tmp/r.sock");
  CHECK(with_auth.path == "/tmp/r.sock");
  CHECK(with_auth.user == "u");
  CHECK(with_auth.password == "pw");
  CHECK(parse_url("unix:///tmp/a@b.sock").path == "/tmp/a@b.sock");
}

TEST_CASE("describe() never shows the password") {
  CHECK(parse_url("redis://u:topsecret@h:1/2").describe() == "h:1/2");
  CHECK(parse_url("unix:///s.sock?db=1").describe() == "unix:/s.sock?db=1");
}

TEST_CASE("malformed URLs are usage errors; rediss is unavailable") {
  struct Case {
    const char* url;
    int code;
  } cases[] = {
      {"http://h", rlock::kExitUsage},        {"redis://h:0", rlock::kExitUsage},
      {"redis://h:70000", rlock::kExitUsage}, {"redis://h:abc", rlock::kExitUsage},
      {"redis://h/x", rlock::kExitUsage},     {"unix://relative.sock", rlock::kExitUsage},
      {"unix:///s?x=1", rlock::kExitUsage},   {"redis://[::1", rlock::kExitUsage},
      {"localhost:6379", rlock::kExitUsage},  {"rediss://h:6380", rlock::kExitUnavailable},
  };
  for (const auto& c : cases) {
    CAPTURE(c.url);
    try {
      parse_url(c.url);
      FAIL("accepted");
    } catch (const rlock::Error& e) {
      CHECK(e.exit_code() == c.code);
    }
  }
}

TEST_CASE("messages about malformed URLs never repeat the userinfo") {
  const char* cases[] = {
      "redis://:Gk5nRt8/Yp2W@host:port",
      "redis://user:S3cret",
      "redis:/:S3cret@host",
      "redis://:S3cret@host:0",
      "redis://:S3cret@host:99999",
      "redis://:S3cret@host:x",
      "redis://u:S3cret@host/x",
      "redis://u:S3cret@host/-1",
      "http://u:S3cret@host",
      "S3cret",
      "redis://:S3cret@[::1",
      "redis://:S3cret@[::1]x",
      "unix://u:S3cret@relative",
      "unix://:S3cret@/s?x=1",
      "unix://:S3cret@/s?db=x",
      "redis://:S3cret@",
      "redis://S3cret:1:2",
      "redis//:S3cret@h",
  };
  for (const std::string url : cases) {
    CAPTURE(url);
    try {
      parse_url(url);
      FAIL("accepted");
    } catch (const rlock::Error& e) {
      CHECK(e.exit_code() == rlock::kExitUsage);
      CHECK(std::string(e.what()).find("S3cret") == std::string::npos);
      CHECK(std::string(e.what()).find("Gk5nRt8") == std::string::npos);
      CHECK(std::string(e.what()).find("Yp2W") == std::string::npos);
    }
  }
}
