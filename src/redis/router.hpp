#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/errors.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"

namespace rlock::redis {

// Which server a request goes to, and what a redirect or a failover reply means for it:
// the part of a Topology that differs between a standalone server, a Sentinel deployment
// and a Cluster. Keys name their slot through their hash tag; an empty key is any server.
class Router {
 public:
  virtual ~Router() = default;

  // The open connection for `key`'s server, opened with `options` (timeouts; the
  // endpoint is the router's) when there is none. Throws UnavailableError.
  virtual Connection& connection_for(std::string_view key, const ConnectOptions& options) = 0;
  // The server that serves `key` now (for a connection of its own: subscriber, clean-up).
  virtual Endpoint endpoint_for(std::string_view key, const ConnectOptions& options) = 0;
  // The server of `key` as far as known without any I/O (the clean-up after a request that
  // timed out must not wait for a stalled server twice); nullopt when not known yet.
  virtual std::optional<Endpoint> known_endpoint_for(std::string_view key) const = 0;

  // What a request for `key` does after the error reply `e`.
  struct Next {
    enum Kind { kThrow, kResend, kAsk } kind = kThrow;
    Connection* ask = nullptr;  // kAsk: send ASKING, then the request, there
  };
  // Called with the error reply of a request for `key`, the `round`th error (from 0) of
  // that request; a resend is never offered past `until` (the request's timeout). May
  // pause (TRYAGAIN, CLUSTERDOWN: 50 ms doubling to 500 ms) and open connections.
  virtual Next after_error(std::string_view key, const ReplyError& e, Deadline until,
                           const ConnectOptions& options, int round) = 0;
  // Called once a script's reply came from `conn`: whether the write it made counts, i.e.
  // whether `conn`'s server was still the one to serve it after the write (Sentinel: a
  // sentinel names it as the master). False: it no longer is (the request is resent
  // where it now goes, as after a failover's refusal); throws UnavailableError when that
  // cannot be known by `until`. Where servers do not fail over behind the client's back,
  // true without a question.
  virtual bool confirm_master(const Connection& /*conn*/, Deadline /*until*/) { return true; }
  // Closes connections an I/O error left broken (the next request opens new ones,
  // re-resolving where the topology does).
  virtual void drop_broken() = 0;
  // Applies a command timeout to every open connection.
  virtual void set_timeout(Millis timeout) = 0;

  // How often a subscriber asks still_serves() while it sleeps (0: never; see
  // Subscriber::recheck): where a server can stop serving the channels without a word to
  // its subscribers.
  virtual Millis recheck_every() const { return Millis(0); }
  // False once `server` (where a subscriber was opened) no longer serves the channels.
  virtual bool still_serves(const Endpoint& /*server*/) { return true; }

  // Every master once (a scan of all keys visits each): the standalone server, Sentinel's
  // master, or every master of a cluster.
  virtual std::vector<Endpoint> masters(const ConnectOptions& options) = 0;
  // True once the servers are known to be a cluster (waiters then need sharded pub/sub).
  virtual bool cluster() const = 0;
};

// Sends ASKING and `argv` in one write (the importing node of an ASK serves the slot for
// the next command only) and returns the reply to `argv`; error replies throw ReplyError.
ReplyPtr command_asking(Connection& conn, const std::vector<std::string_view>& argv);

// Pauses before a resend after TRYAGAIN, CLUSTERDOWN or LOADING: 50 ms doubling to 500 ms
// with `round`, never past `until`. False (without pausing) when no time is left.
bool pause_before_resend(int round, Deadline until);

// The router for `target` (see parse_target). `notice` receives one-line notes meant for
// -v (a plain redis:// URL that turned out to name a cluster node).
std::unique_ptr<Router> make_router(const Target& target,
                                    std::function<void(const std::string&)> notice = {});

}  // namespace rlock::redis
