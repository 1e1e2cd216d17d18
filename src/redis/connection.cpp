#include "redis/connection.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "redis/errors.hpp"
#include "redis/wait_interrupt.hpp"

namespace rlock::redis {

Connection::Connection(std::unique_ptr<Transport> transport, ConnectOptions options)
    : transport_(std::move(transport)),
      reader_(redisReaderCreate()),
      options_(std::move(options)),
      timeout_(options_.command_timeout) {
  if (!reader_) throw UnavailableError("cannot allocate a redis connection");
}

// Every reply read: the server has nothing left to do for this connection, and a reset
// spares it (and this host) the orderly close: the server's FIN, and the TIME_WAIT this
// side keeps for a minute (five a `rlock lock` on a 5-member quorum, run in a loop). A
// request still unanswered keeps the orderly close, which still delivers what the kernel
// has not sent. (Every command appended is owed a reply, so a command not yet written is
// counted too.)
Connection::~Connection() {
  if (transport_ && !broken_ && owed_ == 0) transport_->reset_on_close();
}

Connection Connection::open_unauthenticated(const ConnectOptions& options) {
  return Connection(Transport::open(options.endpoint, options.tls, options.connect_timeout),
                    options);
}

std::vector<std::optional<Connection>> Connection::open_each_unauthenticated(
    const std::vector<ConnectOptions>& each, size_t needed, Millis patience, Deadline until,
    std::vector<std::string>& failures, Millis& slowest) {
  std::vector<Transport::ToOpen> to_open;
  for (const ConnectOptions& o : each) {
    to_open.push_back(
        {o.endpoint, o.tls, std::max(std::min(o.connect_timeout, millis_until(until)), Millis(1))});
  }
  std::vector<Transport::Opened> opened = Transport::open_each(to_open, needed, patience);
  std::vector<std::optional<Connection>> out(each.size());
  failures.assign(each.size(), "");
  for (size_t i = 0; i < each.size(); ++i) {
    if (opened[i].transport) {
      slowest = std::max(slowest, opened[i].took);
      out[i].emplace(Connection(std::move(opened[i].transport), each[i]));
    } else {
      failures[i] = opened[i].failure;
    }
  }
  return out;
}

Connection Connection::open(const ConnectOptions& options) {
  Connection conn = open_unauthenticated(options);
  conn.authenticate();
  return conn;
}

std::vector<std::vector<std::string>> Connection::login_commands(const Endpoint& ep) {
  std::vector<std::vector<std::string>> out;
  if (!ep.password.empty()) {
    out.push_back(ep.user.empty() ? std::vector<std::string>{"AUTH", ep.password}
                                  : std::vector<std::string>{"AUTH", ep.user, ep.password});
  }
  if (ep.db != 0) out.push_back({"SELECT", std::to_string(ep.db)});
  return out;
}

void Connection::authenticate() {
  const Endpoint& ep = options_.endpoint;
  try {
    for (const auto& cmd : login_commands(ep)) {
      command(std::vector<std::string_view>(cmd.begin(), cmd.end()));
    }
  } catch (const ReplyError& e) {
    const std::string line = "redis at " + ep.describe() + " refused the connection: " + e.reply();
    // An ACL refusal (SELECT without +select) is a user to configure, not a server away.
    if (e.code() == "NOPERM")
      throw Error(kExitNoPerm,
                  line + " (the ACL user lacks a right rlock needs; see ACL in rlock(1))");
    throw UnavailableError(line);
  }
}

void Connection::fail(const IoStatus& status, std::string_view during) {
  broken_ = true;
  std::string why =
      status.kind == IoStatus::kClosed ? "connection closed by the server" : status.why;
  throw IoError("lost the connection to redis at " + options_.endpoint.describe() + " " +
                std::string(during) + ": " + why);
}

void Connection::check_open() const {
  if (broken_) throw IoError("redis connection to " + options_.endpoint.describe() + " is closed");
}

// The request in RESP, written here rather than by redisFormatCommandArgv, which formats
// each argument's header with sprintf into a buffer of its own (a lock's request has 27
// arguments, and a quorum formats one for each member).
template <class Argv>
void Connection::append(const Argv& argv) {
  size_t size = 16;
  for (const auto& a : argv) size += a.size() + 24;
  out_.reserve(out_.size() + size);
  auto header = [this](char kind, size_t n) {
    char digits[24];
    out_ += kind;
    out_.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
    out_ += "\r\n";
  };
  header('*', argv.size());
  for (const auto& a : argv) {
    header('$', a.size());
    out_ += a;
    out_ += "\r\n";
  }
  ++owed_;
}

void Connection::await_fd(short events, Deadline until, std::string_view during) {
  while (true) {
    pollfd p[2] = {{fd(), events, 0}, {WaitInterrupt::fd(), POLLIN, 0}};
    long long left = std::max<long long>(millis_until(until).count(), 0);
    int rc = poll(p, p[1].fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (rc > 0 && p[0].revents) return;
    if (rc > 0) {
      broken_ = true;  // a reply may still come: this connection is out of step
      throw InterruptedError("the wait for redis at " + options_.endpoint.describe() + " " +
                             std::string(during) + " was cut short");
    }
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) fail({IoStatus::kFailed, 0, std::strerror(errno)}, during);
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
  IoStatus st = transport_->read_some(buf, sizeof buf);
  if (st.kind != IoStatus::kDone || st.bytes <= 1 || buf[0] != '-') return {};
  std::string_view said(buf + 1, st.bytes - 1);
  return std::string(said.substr(0, said.find_first_of("\r\n")));
}

void Connection::write_all(Deadline until, std::string_view during) {
  size_t written = 0;
  while (written < out_.size()) {
    IoStatus st = transport_->write_some(out_.data() + written, out_.size() - written);
    switch (st.kind) {
      case IoStatus::kDone:
        written += st.bytes;
        break;
      case IoStatus::kWantRead:
        await_fd(POLLIN, until, during);
        break;
      case IoStatus::kWantWrite:
        await_fd(POLLOUT, until, during);
        break;
      default:
        if (std::string said = farewell(); !said.empty()) {
          broken_ = true;
          throw IoError("redis at " + options_.endpoint.describe() +
                        " closed the connection: " + said);
        }
        fail(st, during);
    }
  }
  out_.clear();
}

void Connection::fill(std::optional<Deadline> until, std::string_view during) {
  char buf[16 * 1024];
  while (true) {
    IoStatus st = transport_->read_some(buf, sizeof buf);
    switch (st.kind) {
      case IoStatus::kDone:
        if (redisReaderFeed(reader_.get(), buf, st.bytes) != REDIS_OK)
          fail({IoStatus::kFailed, 0, "out of memory"}, during);
        // A TLS record larger than buf leaves the rest inside OpenSSL, where poll() does
        // not see it.
        if (!transport_->buffered()) return;
        break;
      case IoStatus::kWantRead:
      case IoStatus::kWantWrite:
        if (!until) return;
        await_fd(st.kind == IoStatus::kWantRead ? POLLIN : POLLOUT, *until, during);
        break;
      default:
        fail(st, during);
    }
  }
}

ReplyPtr Connection::buffered_reply(std::string_view during) {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK)
    fail({IoStatus::kFailed, 0, reader_->errstr}, during);
  // A message pushed to a subscriber, or a SUBSCRIBE's second channel, answers nothing sent.
  if (raw && owed_ > 0) --owed_;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

void Connection::read_available(std::string_view during) { fill(std::nullopt, during); }

std::vector<ReplyPtr> Connection::read_replies(size_t replies, Deadline until,
                                               std::string_view during) {
  std::vector<ReplyPtr> out;
  out.reserve(replies);
  while (out.size() < replies) {
    if (ReplyPtr reply = buffered_reply(during)) {
      out.push_back(std::move(reply));
      continue;
    }
    fill(until, during);
  }
  return out;
}

ReplyPtr Connection::command(const std::vector<std::string_view>& argv,
                             const std::function<void()>& in_flight) {
  check_open();
  append(argv);
  auto replies = exchange(1, std::string("during ") + std::string(argv.front()), in_flight);
  ReplyPtr reply = std::move(replies.front());
  if (reply->type == REDIS_REPLY_ERROR) throw ReplyError(std::string(reply->str, reply->len));
  return reply;
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
  check_open();
  for (const auto& cmd : commands) append(cmd);
  return exchange(commands.size(), "during a pipeline");
}

std::vector<ReplyPtr> Connection::pipeline_views(
    const std::vector<std::vector<std::string_view>>& commands,
    const std::function<void()>& in_flight) {
  check_open();
  for (const auto& cmd : commands) append(cmd);
  return exchange(commands.size(), std::string("during ") + std::string(commands.front().front()),
                  in_flight);
}

template <class Commands>
void Connection::send(const Commands& commands) {
  check_open();
  for (const auto& cmd : commands) append(cmd);
  write_all(SteadyClock::now() + timeout_, "during a pipeline");
}
template void Connection::send(const std::vector<std::vector<std::string>>&);
template void Connection::send(const std::vector<std::vector<std::string_view>>&);

std::vector<ReplyPtr> Connection::receive(size_t replies) {
  check_open();
  return read_replies(replies, SteadyClock::now() + timeout_, "during a pipeline");
}

ReplyPtr Connection::command(std::initializer_list<std::string_view> argv) {
  return command(std::vector<std::string_view>(argv));
}

}  // namespace rlock::redis
