#pragma once

#include <hiredis/hiredis.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis/reply.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::redis {

// How to open a connection. Defaults: connect 2s, each command 5s, no replica sync.
struct ConnectOptions {
  Endpoint endpoint;
  Millis connect_timeout{2000};
  Millis command_timeout{5000};
  // --sync-replicas: the writes that take or renew something (Topology::run_synced) are
  // acknowledged by this many replicas (WAIT) before they count; 0 = off, nothing is sent.
  int sync_replicas = 0;
  // --sync-timeout: how long such a WAIT may take. Default 1s.
  Millis sync_timeout{1000};
};

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

// One authenticated connection to one server (move-only). The socket is close-on-exec, so
// a child started by exec never inherits it. After an IoError the connection is dead:
// `broken()` says so, and the owner opens a new one.
class Connection {
 public:
  // Connects, authenticates and selects the database. Throws UnavailableError (69) with
  // one line that names the server and what to check.
  static Connection open(const ConnectOptions& options);

  // Sends one command and returns its reply. Error replies throw ReplyError; I/O problems
  // throw IoError or TimeoutError and leave the connection broken.
  // `in_flight`, if any, runs after the command is written and before its reply is read.
  ReplyPtr command(const std::vector<std::string_view>& argv,
                   const std::function<void()>& in_flight = {});
  ReplyPtr command(std::initializer_list<std::string_view> argv);

  // Sends all commands in one write and reads all replies: one round trip. Error replies
  // are returned (type REDIS_REPLY_ERROR), not thrown; I/O problems throw as command() does.
  std::vector<ReplyPtr> pipeline(const std::vector<std::vector<std::string>>& commands);
  // pipeline() over views, with `in_flight` as command() runs it.
  std::vector<ReplyPtr> pipeline_views(const std::vector<std::vector<std::string_view>>& commands,
                                       const std::function<void()>& in_flight = {});
  // The two halves of pipeline(), so that a caller works while the server answers: send()
  // writes all commands, receive(n) reads the next n replies of what was sent, in order.
  // Each half has the command timeout; error replies are returned as by pipeline().
  void send(const std::vector<std::vector<std::string>>& commands);
  std::vector<ReplyPtr> receive(size_t replies);

  // Timeout of each following command or pipeline as a whole (sending and every reply).
  void set_timeout(Millis timeout);

  Millis timeout() const { return timeout_; }
  bool broken() const { return broken_; }
  // Replicas the server had online when this connection first asked (ROLE, for
  // --sync-replicas); -1 = not asked yet.
  int known_replicas() const { return known_replicas_; }
  void set_known_replicas(int n) { known_replicas_ = n; }
  int fd() const { return ctx_->fd; }
  const ConnectOptions& options() const { return options_; }
  redisContext* context() { return ctx_.get(); }

  // Converts the context's current error into the matching exception (and marks broken).
  [[noreturn]] void throw_io_error(std::string_view during);

 private:
  Connection(ContextPtr ctx, ConnectOptions options)
      : ctx_(std::move(ctx)), options_(std::move(options)) {}
  void authenticate();
  // Writes what is appended and reads `replies` replies, all within the command timeout.
  std::vector<ReplyPtr> exchange(size_t replies, std::string_view during,
                                 const std::function<void()>& in_flight = {});
  void write_all(Deadline until, std::string_view during);
  std::string farewell();
  std::vector<ReplyPtr> read_replies(size_t replies, Deadline until, std::string_view during);
  void await_fd(short events, Deadline until, std::string_view during);

  ContextPtr ctx_;
  ConnectOptions options_;
  bool broken_ = false;
  Millis timeout_{5000};
  bool timeout_applied_ = false;  // the socket has timeout_
  int known_replicas_ = -1;
};

}  // namespace rlock::redis
