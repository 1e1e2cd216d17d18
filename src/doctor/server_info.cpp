#include "doctor/server_info.hpp"

#include <cstdlib>

namespace rlock::doctor {
namespace {

std::string field(const InfoFields& f, const std::string& name) {
  auto it = f.find(name);
  return it == f.end() ? std::string() : it->second;
}

bool mentions_keydb(const InfoFields& server) {
  for (const auto& [name, value] : server) {
    if (name.starts_with("keydb")) return true;
    if (name == "executable" && value.find("keydb") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

InfoFields info_fields(const std::string& text) {
  InfoFields out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (!line.empty() && line[0] != '#' && colon != std::string::npos)
      out[line.substr(0, colon)] = line.substr(colon + 1);
    pos = end + 1;
  }
  return out;
}

ServerKind server_kind(const InfoFields& server, const InfoFields& replication) {
  const std::string redis_version = field(server, "redis_version");
  ServerKind kind{"Redis", redis_version, std::atoi(redis_version.c_str()), false};
  if (!field(server, "valkey_version").empty() || field(server, "server_name") == "valkey") {
    kind.product = "Valkey";
    if (!field(server, "valkey_version").empty()) kind.version = field(server, "valkey_version");
  } else if (!field(server, "dragonfly_version").empty()) {
    kind.product = "Dragonfly";
    kind.version = field(server, "dragonfly_version");
  } else if (mentions_keydb(server)) {
    kind.product = "KeyDB";
  }
  // KeyDB names an active replica's role so, and has the setting of that name.
  const std::string role = field(replication, "role");
  kind.active_replica = role == "active-replica" || field(replication, "active-replica") == "yes" ||
                        field(replication, "active_replica") == "1";
  if (kind.active_replica) kind.product = "KeyDB";
  return kind;
}

}  // namespace rlock::doctor
