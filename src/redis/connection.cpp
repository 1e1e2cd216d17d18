#include "redis/connection.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "redis/errors.hpp"

namespace rlock::redis {
namespace {

timeval to_timeval(Millis ms) {
  long long v = ms.count() > 0 ? ms.count() : 1;
  return timeval{static_cast<time_t>(v / 1000), static_cast<suseconds_t>(v % 1000 * 1000)};
}

ContextPtr connect_raw(const ConnectOptions& o) {
  const Endpoint& ep = o.endpoint;
  timeval tv = to_timeval(o.connect_timeout);
  return ContextPtr(ep.kind == Endpoint::Kind::kUnix
                        ? redisConnectUnixWithTimeout(ep.path.c_str(), tv)
                        : redisConnectWithTimeout(ep.host.c_str(), ep.port, tv));
}

}  // namespace

Connection Connection::open(const ConnectOptions& options) {
  ContextPtr ctx = connect_raw(options);
  if (!ctx) throw UnavailableError("cannot allocate a redis connection");
  std::string where = options.endpoint.describe();
  if (ctx->err) {
    bool timed_out = ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EINPROGRESS);
    std::string what = timed_out ? "timed out after " + format_duration(options.connect_timeout)
                                 : std::string(ctx->errstr);
    throw UnavailableError("cannot connect to redis at " + where + ": " + what +
                           " (is redis-server running there? set --url or RLOCK_URL)");
  }
  fcntl(ctx->fd, F_SETFD, FD_CLOEXEC);
  Connection conn(std::move(ctx), options);
  conn.set_timeout(options.command_timeout);
  conn.authenticate();
  return conn;
}

void Connection::authenticate() {
  const Endpoint& ep = options_.endpoint;
  try {
    if (!ep.password.empty()) {
      if (ep.user.empty()) {
        command({"AUTH", ep.password});
      } else {
        command({"AUTH", ep.user, ep.password});
      }
    }
    if (ep.db != 0) command({"SELECT", std::to_string(ep.db)});
  } catch (const ReplyError& e) {
    throw UnavailableError("redis at " + ep.describe() + " refused the connection: " + e.reply());
  }
}

void Connection::set_timeout(Millis timeout) {
  // Two system calls each time; every renewal and release asks for the same timeout.
  if (timeout_applied_ && timeout == timeout_) return;
  timeout_ = timeout;
  timeout_applied_ = true;
  if (redisSetTimeout(ctx_.get(), to_timeval(timeout)) != REDIS_OK)
    throw_io_error("setting a timeout");
}

void Connection::throw_io_error(std::string_view during) {
  broken_ = true;
  std::string where = options_.endpoint.describe();
  if (ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    throw TimeoutError("redis at " + where + " did not answer " + std::string(during) +
                       " in time (--timeout)");
  }
  std::string why = ctx_->err == REDIS_ERR_EOF ? "connection closed by the server" : ctx_->errstr;
  throw IoError("lost the connection to redis at " + where + " " + std::string(during) + ": " +
                why);
}

namespace {

void append(redisContext* ctx, const std::vector<std::string_view>& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (std::string_view a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), ptrs.data(), lens.data());
}

}  // namespace

void Connection::await_fd(short events, Deadline until, std::string_view during) {
  while (true) {
    pollfd p{ctx_->fd, events, 0};
    int rc =
        poll(&p, 1, static_cast<int>(std::min<long long>(millis_until(until).count(), 1 << 30)));
    if (rc > 0) return;
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) throw_io_error(during);
    broken_ = true;
    throw TimeoutError("redis at " + options_.endpoint.describe() + " did not answer " +
                       std::string(during) + " within " + format_duration(timeout_) +
                       " (--timeout)");
  }
}

std::vector<ReplyPtr> Connection::exchange(size_t replies, std::string_view during,
                                           const std::function<void()>& in_flight) {
  // One deadline for the whole request: a server that drips its reply byte by byte must not
  // stretch a command past --timeout one read at a time.
  Deadline until = SteadyClock::now() + timeout_;
  write_all(until, during);
  if (in_flight) in_flight();
  return read_replies(replies, until, during);
}

// What a server that closed the connection said before it did, if it is still to be read:
// at maxclients, Redis accepts, writes "-ERR max number of clients reached" and closes, and
// the next write fails (EPIPE, or ECONNRESET) with the reason unread. "" when none.
std::string Connection::farewell() {
  char buf[512];
  ssize_t n = recv(ctx_->fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n <= 1 || buf[0] != '-') return {};
  std::string_view said(buf + 1, static_cast<size_t>(n - 1));
  return std::string(said.substr(0, said.find_first_of("\r\n")));
}

void Connection::write_all(Deadline until, std::string_view during) {
  int done = 0;
  while (!done) {
    if (redisBufferWrite(ctx_.get(), &done) != REDIS_OK) {
      // rlock ignores SIGPIPE (main.cpp): a closed connection fails the write instead.
      if (std::string said = farewell(); !said.empty()) {
        broken_ = true;
        throw IoError("redis at " + options_.endpoint.describe() +
                      " closed the connection: " + said);
      }
      throw_io_error(during);
    }
    if (!done) await_fd(POLLOUT, until, during);
  }
}

std::vector<ReplyPtr> Connection::read_replies(size_t replies, Deadline until,
                                               std::string_view during) {
  std::vector<ReplyPtr> out;
  out.reserve(replies);
  while (out.size() < replies) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) throw_io_error(during);
    if (raw) {
      out.emplace_back(static_cast<redisReply*>(raw));
      continue;
    }
    await_fd(POLLIN, until, during);
    if (redisBufferRead(ctx_.get()) != REDIS_OK) throw_io_error(during);
  }
  return out;
}

ReplyPtr Connection::command(const std::vector<std::string_view>& argv,
                             const std::function<void()>& in_flight) {
  if (broken_) throw IoError("redis connection to " + options_.endpoint.describe() + " is closed");
  append(ctx_.get(), argv);
  auto replies = exchange(1, std::string("during ") + std::string(argv.front()), in_flight);
  ReplyPtr reply = std::move(replies.front());
  if (reply->type == REDIS_REPLY_ERROR) throw ReplyError(std::string(reply->str, reply->len));
  return reply;
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
  if (broken_) throw IoError("redis connection to " + options_.endpoint.describe() + " is closed");
  for (const auto& cmd : commands)
    append(ctx_.get(), std::vector<std::string_view>(cmd.begin(), cmd.end()));
  return exchange(commands.size(), "during a pipeline");
}

std::vector<ReplyPtr> Connection::pipeline_views(
    const std::vector<std::vector<std::string_view>>& commands,
    const std::function<void()>& in_flight) {
  if (broken_) throw IoError("redis connection to " + options_.endpoint.describe() + " is closed");
  for (const auto& cmd : commands) append(ctx_.get(), cmd);
  return exchange(commands.size(), std::string("during ") + std::string(commands.front().front()),
                  in_flight);
}

void Connection::send(const std::vector<std::vector<std::string>>& commands) {
  if (broken_) throw IoError("redis connection to " + options_.endpoint.describe() + " is closed");
  for (const auto& cmd : commands)
    append(ctx_.get(), std::vector<std::string_view>(cmd.begin(), cmd.end()));
  write_all(SteadyClock::now() + timeout_, "during a pipeline");
}

std::vector<ReplyPtr> Connection::receive(size_t replies) {
  if (broken_) throw IoError("redis connection to " + options_.endpoint.describe() + " is closed");
  return read_replies(replies, SteadyClock::now() + timeout_, "during a pipeline");
}

ReplyPtr Connection::command(std::initializer_list<std::string_view> argv) {
  return command(std::vector<std::string_view>(argv));
}

}  // namespace rlock::redis
