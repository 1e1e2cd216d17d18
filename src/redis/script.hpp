#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"

namespace rlock::redis {

// One Lua script from lua/, embedded at build time with its SHA1.
struct Script {
  const char* name;
  const char* sha1;
  const char* source;
  // How the members' replies combine on a quorum (`-- @quorum RULE` in the .lua file; see
  // redis/quorum_rule.hpp); "" = no majority semantics: refused there.
  const char* quorum = "";
};

// Runs `script` with EVALSHA; when the server has not cached it (NOSCRIPT, e.g. after a
// restart or SCRIPT FLUSH) falls back to EVAL, which also caches it. One round trip in the
// common case. `in_flight`, if any, runs while the first request is with the server.
// `asking`: each request goes with ASKING (an ASK redirect; see command_asking), the EVAL
// fallback included, and `in_flight` is left for later.
ReplyPtr run_script(Connection& conn, const Script& script,
                    const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args,
                    const std::function<void()>& in_flight = {}, bool asking = false);

// A script's reply and what WAIT said after it.
struct AckedReply {
  ReplyPtr reply;
  long long acked = 0;     // replicas that acknowledged every write so far on this connection
  std::string wait_error;  // WAIT's own error reply, if it failed ("" = none)
};

// run_script, with `WAIT replicas timeout` in the same write right behind the script (the
// EVAL fallback and an ASKING resend alike): the acknowledgement costs the wait itself, not
// a round trip. A script's error reply throws as run_script's does; WAIT's is returned.
AckedReply run_script_acked(Connection& conn, const Script& script,
                            const std::vector<std::string_view>& keys,
                            const std::vector<std::string_view>& args, int replicas, Millis timeout,
                            const std::function<void()>& in_flight = {}, bool asking = false);

}  // namespace rlock::redis

// One declaration per lua/*.lua file (named by its stem), generated with the scripts.
#include "redis/scripts.hpp"  // IWYU pragma: export
