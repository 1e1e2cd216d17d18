#include "redis/script.hpp"

#include <string>

#include "redis/errors.hpp"
#include "redis/router.hpp"

namespace rlock::redis {
namespace {

ReplyPtr send(Connection& conn, std::string_view verb, std::string_view body,
              const std::vector<std::string_view>& keys, const std::vector<std::string_view>& args,
              const std::function<void()>& in_flight = {}, bool asking = false) {
  std::string numkeys = std::to_string(keys.size());
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back(verb);
  argv.push_back(body);
  argv.push_back(numkeys);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  if (asking) return command_asking(conn, argv);
  return conn.command(argv, in_flight);
}

}  // namespace

ReplyPtr run_script(Connection& conn, const Script& script,
                    const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args,
                    const std::function<void()>& in_flight, bool asking) {
  try {
    return send(conn, "EVALSHA", script.sha1, keys, args, in_flight, asking);
  } catch (const ReplyError& e) {
    if (e.code() != "NOSCRIPT") throw;
  }
  return send(conn, "EVAL", script.source, keys, args, {}, asking);
}

}  // namespace rlock::redis
