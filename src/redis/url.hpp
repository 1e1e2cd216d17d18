#pragma once

#include <string>
#include <string_view>
#include <vector>

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
  // This endpoint's user, password and database at another TCP address: a node that a
  // sentinel or a cluster named.
  Endpoint at(std::string tcp_host, int tcp_port) const;
};

// Parses `redis://[user[:password]@]host[:port][/db]` (or `rediss://`, the same over TLS:
// see Target::tls) and `unix://[user[:password]@]/path[?db=N]`.
// `redis://NAME@host` names the ACL user NAME with no password (unlike redis-cli, which
// takes NAME for the password). Anything malformed throws UsageError naming the problem but
// never quoting the URL, so that no part of a password reaches a message.
Endpoint parse_url(std::string_view url);

// Which kind of deployment a URL names.
enum class Deployment { kStandalone, kSentinel, kCluster, kQuorum };

// What a URL names: one server, or the seeds through which rlock finds the servers.
struct Target {
  Deployment kind = Deployment::kStandalone;
  // Standalone: the server. Sentinel and Cluster: the data nodes' user, password and
  // database (its host and port are not used; the servers are found through `seeds`).
  Endpoint endpoint;
  // Sentinel: the sentinels (no credentials: see sentinel_user/sentinel_password).
  // Cluster: the seed nodes (no credentials: the nodes take those of `endpoint`).
  // Quorum: the members, independent masters (credentials and database of `endpoint`).
  std::vector<Endpoint> seeds;
  std::string master_name;  // Sentinel: the name the sentinels monitor the master under
  // Sentinel: the sentinels' own ACL user and password (AUTH), separate from the master's;
  // empty: the sentinels are sent no AUTH.
  std::string sentinel_user;
  std::string sentinel_password;
  // rediss://, rediss-sentinel://, rediss-cluster://, rediss-quorum://: every connection
  // (sentinels, masters, cluster nodes, quorum members) over TLS.
  bool tls = false;

  // `redis-sentinel://h1:26379,h2:26379/NAME` or `redis-cluster://h1:7000,...`, or the
  // standalone server's describe(). Never includes credentials.
  std::string describe() const;
};

// parse_url() for every scheme, plus (each also as rediss-...: over TLS)
//   redis-sentinel://[user[:password]@]h1[:26379][,h2...]/MASTER[?db=N][&sentinel_user=U]
//                    [&sentinel_password=P]
//   redis-cluster://[user[:password]@]h1[:6379][,h2...]
//   redis-quorum://[user[:password]@]h1[:6379],h2,h3[,...][/db]   (3, 5, 7 or 9 members,
//                  each named once: independent masters, see redis/quorum.hpp)
// The userinfo is the data nodes' (the master's), never the sentinels'. It ends at the last
// `@`, as in parse_url(), so a parameter value that holds `@` (or `&`) must have it
// percent-encoded (%40); values are percent-decoded. Malformed: UsageError that never quotes
// the URL.
Target parse_target(std::string_view url);

}  // namespace rlock::redis
