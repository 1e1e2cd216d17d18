#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "doctor/checks.hpp"
#include "redis/errors.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::doctor {

namespace {

// The rights of rlock(1)'s ACL section, each with a command that needs exactly it.
std::vector<std::pair<std::string, std::vector<std::string>>> rights(const std::string& key,
                                                                     const std::string& chan,
                                                                     bool cluster) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out = {
      {"evalsha", {"EVALSHA", std::string(40, '0'), "1", key}},
      {"eval", {"EVAL", "return 0", "1", key}},
      {"ssubscribe", {"SSUBSCRIBE", chan}},
      {"sunsubscribe", {"SUNSUBSCRIBE", chan}},
      {"ping", {"PING"}},
      {"scan", {"SCAN", "0"}},
      {"dbsize", {"DBSIZE"}},
      {"hgetall", {"HGETALL", key}},
      {"pttl", {"PTTL", key}},
      {"get", {"GET", key}},
      {"zcard", {"ZCARD", key}},
      {"type", {"TYPE", key}},
      {"hvals", {"HVALS", key}},
      {"time", {"TIME"}},
      {"zrangebyscore", {"ZRANGEBYSCORE", key, "0", "1"}},
      {"zrem", {"ZREM", key, "m"}},
      {"zrange", {"ZRANGE", key, "0", "1"}},
      {"pubsub|shardnumsub", {"PUBSUB", "SHARDNUMSUB", chan}},
      {"hset", {"HSET", key, "f", "v"}},
      {"pexpire", {"PEXPIRE", key, "1"}},
      {"set", {"SET", key, "v"}},
      {"spublish", {"SPUBLISH", chan, "m"}},
      {"del", {"DEL", key}},
      {"hget", {"HGET", key, "f"}},
      {"hincrby", {"HINCRBY", key, "f", "1"}},
      {"zscore", {"ZSCORE", key, "m"}},
      {"zadd", {"ZADD", key, "1", "m"}},
      {"exists", {"EXISTS", key}},
      {"hexists", {"HEXISTS", key, "f"}},
      {"hdel", {"HDEL", key, "f"}},
      {"hkeys", {"HKEYS", key}},
      {"decrby", {"DECRBY", key, "1"}},
      {"sadd", {"SADD", key, "m"}},
      {"sismember", {"SISMEMBER", key, "m"}},
      {"scard", {"SCARD", key}},
      {"srandmember", {"SRANDMEMBER", key}},
      {"sscan", {"SSCAN", key, "0"}},
      {"hscan", {"HSCAN", key, "0"}},
      {"hmget", {"HMGET", key, "f"}},
      {"zremrangebyscore", {"ZREMRANGEBYSCORE", key, "0", "1"}},
      {"hlen", {"HLEN", key}},
      {"llen", {"LLEN", key}},
      {"rpush", {"RPUSH", key, "v"}},
      {"lpop", {"LPOP", key}},
      {"zcount", {"ZCOUNT", key, "0", "1"}},
      {"lpush", {"LPUSH", key, "v"}},
      {"lset", {"LSET", key, "0", "v"}},
      {"ltrim", {"LTRIM", key, "0", "1"}},
      {"lindex", {"LINDEX", key, "0"}},
      {"lrange", {"LRANGE", key, "0", "1"}},
  };
  if (cluster) {
    out.push_back({"cluster|shards", {"CLUSTER", "SHARDS"}});
    out.push_back({"asking", {"ASKING"}});
  }
  return out;
}

}  // namespace

void check_acl(Checker& c, const std::string& prefix, bool cluster) {
  std::string user;
  try {
    user = c.t.command({"ACL", "WHOAMI"}, redis::Retry::kIdempotent).str();
  } catch (const redis::ReplyError& e) {
    return c.add("acl", Level::kUnknown,
                 "ACL WHOAMI refused (" + e.code() + "): rights not checked");
  }
  auto needed = rights(prefix + "lock:{doctor}", prefix + "chan:{doctor}:lock", cluster);
  std::vector<std::vector<std::string>> dryruns;
  for (const auto& [right, argv] : needed) {
    std::vector<std::string> cmd = {"ACL", "DRYRUN", user};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    dryruns.push_back(std::move(cmd));
  }
  std::vector<redis::Reply> replies = c.t.pipeline(dryruns, redis::Retry::kIdempotent);
  std::string missing;
  for (size_t i = 0; i < replies.size(); ++i) {
    const redis::Reply& r = replies[i];
    std::string text = r.str();
    if (r.is_error()) {
      // DRYRUN itself refused, or unknown (Redis < 7): nothing can be said about the rest.
      return c.add(
          "acl", Level::kUnknown,
          "ACL DRYRUN not available to user " + user + " (" + text + "): rights not checked");
    }
    // Allowed: OK. Refused: a sentence saying which command, key or channel.
    if (text != "OK") missing += (missing.empty() ? "+" : " +") + needed[i].first;
  }
  if (missing.empty()) {
    c.add("acl", Level::kOk, "user " + user + " has every right rlock(1)'s ACL section lists");
  } else {
    c.add("acl", Level::kFail,
          "user " + user + " lacks " + missing +
              " (see ACL in rlock(1)): the scripts that need "
              "them refuse at once, exit 77");
  }
}

}  // namespace rlock::doctor
