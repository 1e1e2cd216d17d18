// What tests check and wait for: rlock's keys and channels on a server, its state there
// (hashes, subscribers, waiters, a snapshot), and its output (JSON, lines).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "redis_server.hpp"
#include "timing.hpp"

namespace rlock::test {

using nlohmann::json;

// Re-checks `condition` every `interval` until it holds or `timeout` passes; returns whether
// it held. Only for state that offers no event to wait on (e.g. PUBSUB SHARDNUMSUB).
bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval = 10ms);

// Key layout of a lock with the default prefix (see the CLI spec).
std::string lock_key(std::string_view name, std::string_view prefix = "rlock:");
std::string fence_key(std::string_view name, std::string_view prefix = "rlock:");
std::string lock_channel(std::string_view name, std::string_view prefix = "rlock:");

// HGETALL as a JSON object field -> value (strings); {} when the key does not exist.
json hash_of(const RedisServer& server, const std::string& key, int db = 0);
// Number of subscribers of a pub/sub channel (PUBSUB SHARDNUMSUB: rlock subscribes with
// SSUBSCRIBE).
long long subscribers(const RedisServer& server, const std::string& channel);

// The waiters of the lock `name` that every member can hand it to: the fewest, over the
// members, of the queued waiters subscribed to their grant channel there. A quorum's waiter
// subscribes to a slow member after it has queued there, and a member passes over a waiter
// that does not listen: waiters queued on all members are in one order only once this
// counts them.
long long live_waiters(const RedisServer& server, std::string_view name,
                       std::string_view prefix = "rlock:");
// The queued waiters of the lock `name` subscribed to their grant channel on `member` (one
// of server.members()) alone.
long long live_waiters_here(const RedisServer& member, std::string_view name,
                            std::string_view prefix = "rlock:");

// Parses `text` as one JSON document; FAILs the test with the text if it is not JSON.
json parse_json(const std::string& text);
// The JSON object on each line of `text` (JSON-lines output such as delay-pop's).
std::vector<json> lines_of(const std::string& text);
// The sorted member names of a JSON object, as a JSON array (readable in failure output).
json keys_of(const json& object);
// Every key with its type, whether it expires and its serialized value: what "nothing
// changed in Redis" compares.
std::map<std::string, std::string> snapshot(const RedisServer& redis);
// Empties `redis` (keys and script cache) and gives the user of `user_line`, a redis.conf
// line `user NAME RULES...`, exactly those rules: the state of a new server started with
// that line, without starting one (a cluster node serves only a second or two after its
// start).
void as_new_server_with_user(const RedisServer& redis, const std::string& user_line);
// Text joined by a stream: GCC 12 at -O3 warns falsely (-Wrestrict) on "lit" + std::string.
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Number of lines in `text`: its '\n' count, plus one for an unterminated last line.
int line_count(std::string_view text);

}  // namespace rlock::test
