#pragma once

#include <string>
#include <string_view>

namespace rlock::redis {

// Where and how to reach one Redis server. The password is never printed.
struct Endpoint {
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string path;  // unix socket
  int db = 0;
  std::string user;  // ACL user; empty = default user
  std::string password;

  // `host:port` or `unix:PATH[?db=N]`, for messages. Never includes credentials.
  std::string describe() const;
};

// Parses `redis://[user[:password]@]host[:port][/db]` and `unix://[user[:password]@]/path[?db=N]`.
// `redis://NAME@host` names the ACL user NAME with no password (unlike redis-cli, which
// takes NAME for the password). `rediss://` throws UnavailableError (this build has no
// TLS); anything else malformed throws UsageError naming the problem but never quoting the
// URL, so that no part of a password reaches a message.
Endpoint parse_url(std::string_view url);

}  // namespace rlock::redis
