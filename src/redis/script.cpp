#include "redis/script.hpp"

#include <algorithm>
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

// Sends [ASKING,] `verb` and WAIT in one write.
AckedReply send_acked(Connection& conn, std::string_view verb, std::string_view body,
                      const std::vector<std::string_view>& keys,
                      const std::vector<std::string_view>& args,
                      const std::vector<std::string_view>& wait,
                      const std::function<void()>& in_flight, bool asking) {
  std::string numkeys = std::to_string(keys.size());
  std::vector<std::vector<std::string_view>> commands;
  if (asking) commands.push_back({"ASKING"});
  std::vector<std::string_view> argv = {verb, body, numkeys};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  commands.push_back(std::move(argv));
  commands.push_back(wait);
  auto replies = conn.pipeline_views(commands, in_flight);
  for (size_t i = 0; i + 1 < replies.size(); ++i) {
    const redisReply* r = replies[i].get();
    if (r->type == REDIS_REPLY_ERROR) throw ReplyError(std::string(r->str, r->len));
  }
  AckedReply out;
  const redisReply* w = replies.back().get();
  if (w->type == REDIS_REPLY_INTEGER) {
    out.acked = w->integer;
  } else {
    out.wait_error = w->type == REDIS_REPLY_ERROR ? std::string(w->str, w->len)
                                                  : std::string("WAIT gave no count");
  }
  out.reply = std::move(replies[replies.size() - 2]);
  return out;
}

}  // namespace

AckedReply run_script_acked(Connection& conn, const Script& script,
                            const std::vector<std::string_view>& keys,
                            const std::vector<std::string_view>& args, int replicas, Millis timeout,
                            const std::function<void()>& in_flight, bool asking) {
  std::string n = std::to_string(replicas),
              ms = std::to_string(std::max<long long>(timeout.count(), 1));
  std::vector<std::string_view> wait = {"WAIT", n, ms};
  try {
    return send_acked(conn, "EVALSHA", script.sha1, keys, args, wait, in_flight, asking);
  } catch (const ReplyError& e) {
    if (e.code() != "NOSCRIPT") throw;
  }
  return send_acked(conn, "EVAL", script.source, keys, args, wait, {}, asking);
}

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
