#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/reply.hpp"
#include "redis/tls.hpp"
#include "redis/transport.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::redis {

// How to open a connection. Defaults: connect 2s, each command 5s, no replica sync, no TLS.
struct ConnectOptions {
  Endpoint endpoint;
  Millis connect_timeout{2000};
  Millis command_timeout{5000};
  // --sync-replicas: the writes that take or renew something (Topology::run_synced) are
  // acknowledged by this many replicas (WAIT) before they count; 0 = off, nothing is sent.
  int sync_replicas = 0;
  // --sync-timeout: how long such a WAIT may take. Default 1s.
  Millis sync_timeout{1000};
  // TLS for every connection opened with these options (rediss:// URLs); null: plain. The
  // connect timeout covers the TCP connect and the TLS handshake together.
  std::shared_ptr<const TlsContext> tls;
};

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};

// One authenticated connection to one server (move-only): a Transport (plain or TLS, the
// only difference between the two) under hiredis's reply parser. The socket is
// close-on-exec, so a child started by exec never inherits it. After an IoError the
// connection is dead: `broken()` says so, and the owner opens a new one.
class Connection {
 public:
  // Connects, authenticates and selects the database. Throws UnavailableError (69) with
  // one line that names the server and what to check.
  static Connection open(const ConnectOptions& options);
  // Connects (TLS included) without AUTH or SELECT: for a caller that sends those itself in
  // the same write as its request (Topology::send_cleanup).
  static Connection open_unauthenticated(const ConnectOptions& options);
  // open_unauthenticated for each options at once, by `until` at the latest (see
  // Transport::open_each for `needed` and `patience`): failures[i] says why the i-th did
  // not open; `slowest` becomes at least what the slowest that opened took.
  static std::vector<std::optional<Connection>> open_each_unauthenticated(
      const std::vector<ConnectOptions>& each, size_t needed, Millis patience, Deadline until,
      std::vector<std::string>& failures, Millis& slowest);
  // AUTH and SELECT as `endpoint` asks for them (none for neither): what authenticate()
  // sends, for a caller that puts them in the same write as its first request.
  static std::vector<std::vector<std::string>> login_commands(const Endpoint& endpoint);

  // With every reply read, the connection is reset rather than closed (see the definition).
  ~Connection();
  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;

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
  // `Commands`: argument lists of std::string (the default, for a braced list) or of
  // std::string_view.
  template <class Commands = std::vector<std::vector<std::string>>>
  void send(const Commands& commands);
  std::vector<ReplyPtr> receive(size_t replies);

  // Timeout of each following command or pipeline as a whole (sending and every reply).
  void set_timeout(Millis timeout) { timeout_ = timeout; }

  // For a caller that polls fd() itself (Subscriber): the next reply already received, or
  // null; and a read of what the socket has now, without waiting. Both throw IoError (and
  // leave the connection broken) when the connection failed or the server closed it.
  ReplyPtr buffered_reply(std::string_view during);
  void read_available(std::string_view during);

  Millis timeout() const { return timeout_; }
  bool broken() const { return broken_; }
  // Replicas the server had online when this connection first asked (ROLE, for
  // --sync-replicas); -1 = not asked yet.
  int known_replicas() const { return known_replicas_; }
  void set_known_replicas(int n) { known_replicas_ = n; }
  int fd() const { return transport_->fd(); }
  // See Transport::peer_certificate_expiry.
  std::optional<std::chrono::system_clock::time_point> peer_certificate_expiry() const {
    return transport_->peer_certificate_expiry();
  }
  const ConnectOptions& options() const { return options_; }

 private:
  Connection(std::unique_ptr<Transport> transport, ConnectOptions options);
  void authenticate();
  // `argv`: std::string or std::string_view arguments.
  template <class Argv>
  void append(const Argv& argv);
  // Writes what is appended and reads `replies` replies, all within the command timeout.
  std::vector<ReplyPtr> exchange(size_t replies, std::string_view during,
                                 const std::function<void()>& in_flight = {});
  void write_all(Deadline until, std::string_view during);
  std::string farewell();
  std::vector<ReplyPtr> read_replies(size_t replies, Deadline until, std::string_view during);
  // Reads what arrives into the reply parser; waits for it until `until`, or, without a
  // deadline, returns when nothing is there.
  void fill(std::optional<Deadline> until, std::string_view during);
  void await_fd(short events, Deadline until, std::string_view during);
  [[noreturn]] void fail(const IoStatus& status, std::string_view during);
  void check_open() const;

  std::unique_ptr<Transport> transport_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
  std::string out_;  // formatted commands not written yet
  ConnectOptions options_;
  bool broken_ = false;
  Millis timeout_{5000};
  int known_replicas_ = -1;
  size_t owed_ = 0;  // replies to the commands sent that are not read yet
};

}  // namespace rlock::redis
