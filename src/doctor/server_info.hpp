#pragma once

#include <map>
#include <string>

namespace rlock::doctor {

// "name:value" lines (INFO, CLUSTER INFO) as name -> value.
using InfoFields = std::map<std::string, std::string>;
InfoFields info_fields(const std::string& text);

// Which server answers, as it names itself. Valkey keeps a frozen redis_version (7.2.4)
// beside valkey_version, Dragonfly one beside dragonfly_version: the product's own version
// is what an operator knows, the Redis one is what says which commands it has.
struct ServerKind {
  std::string product;          // "Redis", "Valkey", "KeyDB", "Dragonfly"
  std::string version;          // the product's own version
  int redis_major = 0;          // major of redis_version: the Redis whose commands it has
  bool active_replica = false;  // KeyDB active replication: replicas that take writes too
};

// From INFO server and INFO replication.
ServerKind server_kind(const InfoFields& server, const InfoFields& replication);

}  // namespace rlock::doctor
