// The checks and waits of assertions.hpp.
#include "assertions.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

namespace rlock::test {

bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto until = deadline(timeout);
  for (;;) {
    if (condition()) return true;
    if (Clock::now() >= until) return false;
    ::usleep(static_cast<useconds_t>(interval.count() * 1000));
  }
}

std::string lock_key(std::string_view name, std::string_view prefix) {
  return std::string(prefix) + "lock:{" + std::string(name) + "}";
}

std::string fence_key(std::string_view name, std::string_view prefix) {
  return lock_key(name, prefix) + ":fence";
}

std::string lock_channel(std::string_view name, std::string_view prefix) {
  return std::string(prefix) + "chan:{" + std::string(name) + "}:lock";
}

json hash_of(const RedisServer& server, const std::string& key, int db) {
  auto flat = server.cmd({"HGETALL", key}, db);
  json obj = json::object();
  for (size_t i = 0; i + 1 < flat.size(); i += 2) obj[flat[i]] = flat[i + 1];
  return obj;
}

long long subscribers(const RedisServer& server, const std::string& channel) {
  auto reply = server.cmd({"PUBSUB", "SHARDNUMSUB", channel});
  if (reply.size() != 2) throw RedisError("unexpected PUBSUB SHARDNUMSUB reply");
  return std::stoll(reply[1]);
}

long long live_waiters_here(const RedisServer& member, std::string_view name,
                            std::string_view prefix) {
  long long here = 0;
  for (const std::string& entry :
       member.cmd({"ZRANGE", lock_key(name, prefix) + ":waiters", "0", "-1"})) {
    // An entry is "<lease>:<kind>:<wait id>:<owner>".
    const size_t kind = entry.find(':'), id = entry.find(':', kind + 1),
                 owner = entry.find(':', id + 1);
    if (owner == std::string::npos) continue;
    const std::string channel =
        lock_channel(name, prefix) + ":" + entry.substr(id + 1, owner - id - 1);
    if (subscribers(member, channel) > 0) ++here;
  }
  return here;
}

long long live_waiters(const RedisServer& server, std::string_view name, std::string_view prefix) {
  long long fewest = -1;
  for (const RedisServer* m : server.members()) {
    const long long here = live_waiters_here(*m, name, prefix);
    fewest = fewest < 0 ? here : std::min(fewest, here);
  }
  return fewest;
}

json parse_json(const std::string& text) {
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded()) FAIL("not one JSON document: [" << text << "]");
  return parsed;
}

json keys_of(const json& object) {
  json names = json::array();
  for (const auto& item : object.items()) names.push_back(item.key());
  std::sort(names.begin(), names.end());
  return names;
}

void as_new_server_with_user(const RedisServer& redis, const std::string& user_line) {
  std::istringstream words(user_line);
  std::string word;
  std::vector<std::string> setuser{"ACL", "SETUSER"};
  if (!(words >> word) || word != "user" || !(words >> word))
    throw std::invalid_argument("not a `user NAME RULES...` line: " + user_line);
  setuser.insert(setuser.end(), {word, "reset"});
  while (words >> word) setuser.push_back(word);
  redis.cmd({"FLUSHALL"});
  redis.cmd({"SCRIPT", "FLUSH"});
  redis.cmd(setuser);
}

std::map<std::string, std::string> snapshot(const RedisServer& redis) {
  std::map<std::string, std::string> all;
  for (const auto& key : redis.cmd({"KEYS", "*"}))
    all[key] = redis.cmd_str({"TYPE", key}) +
               (redis.cmd_int({"PTTL", key}) == -1 ? ":persistent:" : ":expiring:") +
               redis.cmd_str({"DUMP", key});
  return all;
}

std::vector<json> lines_of(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(parse_json(line));
  return out;
}

int line_count(std::string_view text) {
  int n = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

}  // namespace rlock::test
