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

TEST_CASE("malformed URLs are usage errors") {
  struct Case {
    const char* url;
    int code;
  } cases[] = {
      {"http://h", rlock::kExitUsage},        {"redis://h:0", rlock::kExitUsage},
      {"redis://h:70000", rlock::kExitUsage}, {"redis://h:abc", rlock::kExitUsage},
      {"redis://h/x", rlock::kExitUsage},     {"unix://relative.sock", rlock::kExitUsage},
      {"unix:///s?x=1", rlock::kExitUsage},   {"redis://[::1", rlock::kExitUsage},
      {"localhost:6379", rlock::kExitUsage},  {"rediss://h:0", rlock::kExitUsage},
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

using rlock::redis::Deployment;
using rlock::redis::parse_target;
using rlock::redis::Target;

TEST_CASE("redis-sentinel:// and redis-cluster:// URLs") {
  struct Case {
    const char* url;
    Deployment kind;
    const char* seeds;  // describe() of each seed, comma-separated
    const char* master;
    int db;
    const char* user;
    const char* password;
    const char* sentinel_user;
    const char* sentinel_password;
  } cases[] = {
      {"redis-sentinel://h1:26379,h2:26380/mymaster", Deployment::kSentinel, "h1:26379,h2:26380",
       "mymaster", 0, "", "", "", ""},
      {"redis-sentinel://h1/m", Deployment::kSentinel, "h1:26379", "m", 0, "", "", "", ""},
      {"redis-sentinel://:pw@h1:1,[::1]:2/m?db=3", Deployment::kSentinel, "h1:1,[::1]:2", "m", 3,
       "", "pw", "", ""},
      {"redis-sentinel://alice:p/s@h:1/m?sentinel_password=s%40cret&db=2", Deployment::kSentinel,
       "h:1", "m", 2, "alice", "p/s", "", "s@cret"},
      {"redis-sentinel://h:1/my%20master?sentinel_user=sue&sentinel_password=x",
       Deployment::kSentinel, "h:1", "my master", 0, "", "", "sue", "x"},
      {"redis-sentinel://u:p@ss@h:1/m", Deployment::kSentinel, "h:1", "m", 0, "u", "p@ss", "", ""},
      {"redis-cluster://h1:7000,h2:7001,h3", Deployment::kCluster, "h1:7000,h2:7001,h3:6379", "", 0,
       "", "", "", ""},
      {"redis-cluster://bob:pw@h1:7000/", Deployment::kCluster, "h1:7000", "", 0, "bob", "pw", "",
       ""},
      {"redis-cluster://h1:7000/0", Deployment::kCluster, "h1:7000", "", 0, "", "", "", ""},
      {"redis://h:1/2", Deployment::kStandalone, "", "", 2, "", "", "", ""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.url);
    Target t = parse_target(c.url);
    CHECK(t.kind == c.kind);
    std::string seeds;
    for (const auto& s : t.seeds) seeds += (seeds.empty() ? "" : ",") + s.describe();
    CHECK(seeds == c.seeds);
    for (const auto& s : t.seeds) CHECK(s.password.empty());
    CHECK(t.master_name == c.master);
    CHECK(t.endpoint.db == c.db);
    CHECK(t.endpoint.user == c.user);
    CHECK(t.endpoint.password == c.password);
    CHECK(t.sentinel_user == c.sentinel_user);
    CHECK(t.sentinel_password == c.sentinel_password);
  }
}

TEST_CASE("Target::describe() names the seeds and never a password") {
  CHECK(parse_target("redis-sentinel://:pw@a:1,b:2/m?db=1&sentinel_password=sp").describe() ==
        "redis-sentinel://a:1,b:2/m?db=1");
  CHECK(parse_target("redis-cluster://u:pw@a:1,b:2").describe() == "redis-cluster://a:1,b:2");
  CHECK(parse_target("redis://:pw@a:1").describe() == "a:1");
}

TEST_CASE("malformed sentinel and cluster URLs: one usage error that repeats no secret") {
  const char* cases[] = {
      "redis-sentinel://h:1",                 // no master
      "redis-sentinel://h:1/",                // empty master
      "redis-sentinel:///m",                  // no sentinel
      "redis-sentinel://h:1,,h:2/m",          // empty host in the list
      "redis-sentinel://h:1,/m",              // trailing comma
      "redis-sentinel://h:0/m",               // port
      "redis-sentinel://h:S3cret/m",          // port
      "redis-sentinel://:S3cret@h:1/m?db=x",  // db
      "redis-sentinel://h:1/m?db=1&db=2",     // twice
      "redis-sentinel://h:1/m?S3cret",        // no '='
      "redis-sentinel://h:1/m?S3cret=1",      // unknown parameter
      "redis-sentinel://h:1/m?sentinel_password=a&sentinel_password=S3cret",  // twice
      "redis-sentinel://h:1/m/x",              // '/' in the master name
      "redis-sentinel://h:1/m%0A",             // control character
      "redis-sentinel://:S3cret@[::1/m",       // bracket
      "redis-cluster://",                      // no node
      "redis-cluster://:S3cret@h:1/2",         // db
      "redis-cluster://:S3cret@h:1?x=S3cret",  // parameters
      "redis-cluster://h:1,,h:2",              // empty host
      "redis-clusters://:S3cret@h",            // unknown scheme
      "sentinel://:S3cret@h/m",                // unknown scheme
  };
  for (const std::string url : cases) {
    CAPTURE(url);
    try {
      parse_target(url);
      FAIL("accepted");
    } catch (const rlock::Error& e) {
      std::string what = e.what();
      CHECK(e.exit_code() == rlock::kExitUsage);
      CHECK(what.find("S3cret") == std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
      CHECK(what.find("invalid redis URL") == 0);
    }
  }
}

TEST_CASE("an unknown scheme names every URL form") {
  try {
    parse_target("redis-sentinal://h/m");
    FAIL("accepted");
  } catch (const rlock::Error& e) {
    std::string what = e.what();
    CHECK(what.find("redis-sentinel://") != std::string::npos);
    CHECK(what.find("redis-cluster://") != std::string::npos);
  }
}

TEST_CASE("rediss URLs: the same forms over TLS") {
  auto standalone = parse_target("rediss://u:pw@h:6380/2");
  CHECK(standalone.tls);
  CHECK(standalone.kind == Deployment::kStandalone);
  CHECK(standalone.endpoint.describe() == "h:6380/2");
  CHECK(standalone.endpoint.password == "pw");
  CHECK_FALSE(parse_target("redis://h:6380").tls);
  auto sentinel = parse_target("rediss-sentinel://s1:26380,s2/mymaster?db=1");
  CHECK(sentinel.tls);
  CHECK(sentinel.kind == Deployment::kSentinel);
  CHECK(sentinel.describe() == "rediss-sentinel://s1:26380,s2:26379/mymaster?db=1");
  auto cluster = parse_target("rediss-cluster://c1:7000");
  CHECK(cluster.tls);
  CHECK(cluster.kind == Deployment::kCluster);
  CHECK(cluster.describe() == "rediss-cluster://c1:7000");
  CHECK_FALSE(parse_target("redis-cluster://c1:7000").tls);
}

TEST_CASE("redis-quorum:// URLs: 3 to 9 members, odd, each once") {
  using rlock::redis::Deployment;
  using rlock::redis::parse_target;
  auto t = parse_target("redis-quorum://u:pw@a:1,b:2,c/3");
  CHECK(t.kind == Deployment::kQuorum);
  CHECK(t.seeds.size() == 3);
  CHECK(t.seeds[2].port == 6379);
  CHECK(t.endpoint.user == "u");
  CHECK(t.endpoint.password == "pw");
  CHECK(t.endpoint.db == 3);
  CHECK(t.describe() == "redis-quorum://a:1,b:2,c:6379/3");
  CHECK(parse_target("rediss-quorum://a,b,c,d,e,f,g,h,i").tls);
  const char* cases[] = {
      "redis-quorum://:S3cret@a",              // 1 member
      "redis-quorum://:S3cret@a,b",            // even
      "redis-quorum://a,b,c,d",                // even
      "redis-quorum://a,b,c,d,e,f,g,h,i,j,k",  // more than 9
      "redis-quorum://:S3cret@a:1,b:2,a:1",    // twice
      "redis-quorum://a,b,c?x=S3cret",         // parameters
      "redis-quorum://a,,c",                   // empty host
      "redis-quorum://a,b,redis://c",          // another scheme inside
  };
  for (const std::string url : cases) {
    CAPTURE(url);
    try {
      parse_target(url);
      FAIL("accepted");
    } catch (const rlock::Error& e) {
      std::string what = e.what();
      CHECK(e.exit_code() == rlock::kExitUsage);
      CHECK(what.find("S3cret") == std::string::npos);
      CHECK(what.find("invalid redis URL") == 0);
    }
  }
}
