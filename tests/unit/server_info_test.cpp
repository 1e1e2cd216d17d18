#include "doctor/server_info.hpp"

#include <doctest/doctest.h>

#include <string>

namespace rlock::doctor {
namespace {

// INFO server of Valkey 8.1.1, with the fields Valkey adds beside Redis's.
const char* kValkeyServer =
    "# Server\r\n"
    "redis_version:7.2.4\r\n"
    "server_name:valkey\r\n"
    "valkey_version:8.1.1\r\n"
    "valkey_release_stage:ga\r\n"
    "redis_git_sha1:00000000\r\n"
    "server_mode:standalone\r\n"
    "os:Linux 6.1.0 x86_64\r\n"
    "run_id:3c2b1a\r\n"
    "tcp_port:6379\r\n"
    "executable:/usr/bin/valkey-server\r\n";

TEST_CASE("server_kind names the server and its own version as INFO gives them") {
  struct Case {
    std::string server, replication;
    const char* product;
    const char* version;
    int redis_major;
    bool active_replica;
  };
  const Case cases[] = {
      {kValkeyServer, "role:master\r\n", "Valkey", "8.1.1", 7, false},
      {"redis_version:7.0.15\r\nredis_mode:standalone\r\nexecutable:/usr/bin/redis-server\r\n",
       "role:master\r\n", "Redis", "7.0.15", 7, false},
      {"redis_version:8.0.2\r\nredis_mode:cluster\r\n", "role:master\r\n", "Redis", "8.0.2", 8,
       false},
      {"redis_version:7.4.0\r\ndragonfly_version:df-v1.27.1\r\nredis_mode:standalone\r\n",
       "role:master\r\n", "Dragonfly", "df-v1.27.1", 7, false},
      {"redis_version:6.3.4\r\nexecutable:/usr/local/bin/keydb-server\r\n", "role:master\r\n",
       "KeyDB", "6.3.4", 6, false},
      {"redis_version:6.3.4\r\n", "role:active-replica\r\nmaster_host:10.0.0.2\r\n", "KeyDB",
       "6.3.4", 6, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.server);
    ServerKind kind = server_kind(info_fields(c.server), info_fields(c.replication));
    CHECK(kind.product == c.product);
    CHECK(kind.version == c.version);
    CHECK(kind.redis_major == c.redis_major);
    CHECK(kind.active_replica == c.active_replica);
  }
}

}  // namespace
}  // namespace rlock::doctor
