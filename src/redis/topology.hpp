#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/dispatch.hpp"
#include "redis/retry.hpp"
#include "redis/script.hpp"
#include "redis/subscriber.hpp"

namespace rlock::redis {

// Which servers exist and how to reach the one that serves a hash tag. Primitives, the
// watchdog and waiters go through it and never build connections themselves, nor know
// whether it is one server, a Sentinel deployment, a Cluster (its Router does) or a quorum
// (its Dispatch does). Command connections open lazily and are replaced when they break;
// requests follow redirects and failovers (see Router).
class Topology {
 public:
  // One standalone server, options.endpoint.
  explicit Topology(ConnectOptions options);
  // On a quorum (redis-quorum://), requests go to every member at once and their replies
  // combine by the rule each script declares (see redis/quorum.hpp); what has no rule (a script of
  // a semaphore, latch, limiter or delay queue, a plain command or pipeline) throws UsageError
  // before anything is sent.
  // What `target` names (parse_target); `options` gives the timeouts and the data nodes'
  // credentials. `notice` gets one-line notes for -v.
  Topology(const Target& target, ConnectOptions options,
           std::function<void(const std::string&)> notice = {});
  Topology(Topology&&) = default;
  ~Topology();

  // Runs `script` on the server of the keys' hash tag. Throws what the connection throws.
  // The request has a budget of --timeout from its first send (or ends at `until`): with
  // Retry::kIdempotent an attempt waits for half of what is left (the last one for all of
  // it), and an I/O error or a timeout is followed by another try on a fresh connection, up
  // to kMaxTries: a reply lost with a dropped connection or stuck in a dead flow is
  // fetched again (the server answers a repeat with the reply it recorded).
  // A resend on another connection than the first send's (after an I/O error, a
  // failover's refusal, a redirect) is a new attempt: the server there may have lost what
  // the first one had (an unreplicated hold), so `resend_args`, when given, go out instead
  // (a waiter's attempt as a reconnected waiter's claim, see prim/wait.hpp), and resends()
  // counts it. On Sentinel a reply counts only once a sentinel names its server as the
  // master after it (Router::confirm_master): else the request goes to the master named
  // now, or throws UnavailableError when no sentinel answers.
  Reply run(const Script& script, const std::vector<std::string_view>& keys,
            const std::vector<std::string_view>& args, Retry retry = Retry::kNever,
            std::optional<Deadline> until = std::nullopt,
            const std::vector<std::string_view>* resend_args = nullptr);

  // run() for a write that takes or renews something: with --sync-replicas N
  // (options().sync_replicas), `WAIT N --sync-timeout` goes in the same write right behind
  // the script, on the same connection (whatever server the topology routes it to, after a
  // redirect, an ASK or a NOSCRIPT fallback too), and the reply says how many replicas
  // acknowledged; the budget grows by --sync-timeout (unless limit_timeout bounds it). A
  // resend after a lost reply waits again: each script's repeat writes its record anew, so
  // that the WAIT behind it covers the first run's write. Before the first such request on
  // a connection, ROLE: a master with fewer than N replicas online throws ReplicationError
  // before anything is written, unless `judged_by_reply` (see Acks). Without
  // --sync-replicas this is run() (acks.wanted = 0). The caller decides what a short
  // acknowledgement means for what the script did.
  Synced run_synced(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry = Retry::kNever,
                    std::string_view about = {}, bool judged_by_reply = false,
                    const std::vector<std::string_view>* resend_args = nullptr);

  // How many requests so far were resent on another connection than their first send's
  // (see run()): a waiter that sees this change judges itself reconnected.
  unsigned long long resends() const { return dispatch_->resends(); }

  // Until when the clean-up after the request that failed last may take (the end of that
  // request's budget), or now + --timeout when the last request did not fail.
  Deadline cleanup_until() const;

  // Runs a plain command (reads for inspect); same retry rule.
  Reply command(const std::vector<std::string_view>& argv, Retry retry = Retry::kNever);
  // Sends all commands in one write and reads all replies (one round trip); error replies
  // are returned, not thrown. Retried as run() is when every command is idempotent. `key`
  // (if any) names the server, as run()'s first key does.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands,
                              Retry retry = Retry::kNever, std::string_view key = {});
  // pipeline() in two halves (see Connection::send): commands sent and not yet received
  // must all be received before any other request on this topology. Never retried.
  void send(const std::vector<std::vector<std::string>>& commands);
  std::vector<Reply> receive(size_t replies);

  // A subscriber of its own connection, subscribed to `channels` on the server of their
  // hash tag: sharded pub/sub where the server has it (Redis 7). `classic` (channels of
  // the same slots) are subscribed with SUBSCRIBE besides. Channels of several slots of a
  // cluster get a connection per slot, joined (Subscriber::join).
  Subscriber subscribe(const std::vector<std::string>& channels,
                       const std::vector<std::string>& classic = {});
  // A subscriber of its own connection to the channels matching `pattern` (PSUBSCRIBE) on
  // the server that holds every key: the standalone server or Sentinel's master (left with
  // IoError once it no longer is). nullopt on a cluster, whose nodes each publish only
  // what happens to their own keys (keyspace notifications).
  std::optional<Subscriber> subscribe_pattern(const std::string& pattern);

  // Runs `fn` once for every master, with a topology that sends everything to that one
  // server (a scan of all keys: inspect). On a standalone server or Sentinel, once with
  // this topology.
  void for_each_master(const std::function<void(Topology&)>& fn);

  // Sends `script` on a connection of its own and waits at most `patience` for the reply,
  // for the clean-up after a request that may or may not have been executed: whether or
  // not the reply comes, the script reached the server's socket when this returns true,
  // and a stalled server runs it when it resumes. Connecting may take kCleanupMargin even
  // when `patience` is 0. Never throws.
  bool send_cleanup(const Script& script, const std::vector<std::string>& keys,
                    const std::vector<std::string>& args, Millis patience) noexcept;

  // Keeps a subscriber that is no longer needed open until close_retired() (or the end of
  // the topology): closing it wakes the server at once, just when the hold it waited for
  // is handed to a job that should start first.
  void retire(Subscriber subscriber);
  // Runs the work handed to after_start(), then closes the retired subscribers.
  void close_retired();
  // Work that can wait until the job the acquisition was for has started (a pool leaving
  // the queues of the members it did not take), run by close_retired(), never by the
  // destructor: whoever hands it over also runs it if no job starts. Must not throw.
  void after_start(std::function<void()> work);

  // Bounds the command timeout of the next requests (renewals near the lease deadline).
  void limit_timeout(Millis timeout);

  // `work` runs once, while the next script sent is with the server (after its request is
  // written, before its reply is read): what a caller needs later but not before that
  // reply, done in the round trip's time. It must not throw and must not use this
  // topology. A request that fails before it is written leaves it for later: whoever
  // needs its result calls it if it has not run (see cli::Supervision::prepare).
  void while_next_script_runs(std::function<void()> work) {
    dispatch_->while_next_script_runs(std::move(work));
  }

  const ConnectOptions& options() const { return dispatch_->options(); }
  // True on a Sentinel deployment or a Cluster (servers meant to fail over to a replica).
  bool replicated() const;
  // What a hold of `lease` must leave for the drift between the servers' clocks (a quorum's
  // members each count its lease on their own clock): 0 on one server.
  Millis drift(Millis lease) const { return dispatch_->drift(lease); }
  // The members of a quorum (redis-quorum://); empty elsewhere.
  std::vector<Endpoint> quorum_members() const;
  // On a quorum, which members answer within the request timeout, asked all at once: for
  // each member "" or why not; empty elsewhere.
  std::vector<std::string> silent_quorum_members();
  // host:port of the server that requests without a key go to (each master's, inside
  // for_each_master). May connect (Sentinel asks the sentinels).
  std::string server_name();
  // The notAfter of the TLS certificate that server presented to the connection requests
  // use (see server_name); nullopt over a plain connection. May connect.
  std::optional<std::chrono::system_clock::time_point> server_certificate_expiry();

  // What a Sentinel deployment's URL names: the master's name and how to reach each
  // sentinel (its address, the sentinels' credentials, TLS, these timeouts), for a caller
  // that asks the sentinels about themselves (rlock doctor). Empty `each` elsewhere.
  struct Sentinels {
    std::string master_name;
    std::vector<ConnectOptions> each;
  };
  Sentinels sentinels() const;

 private:
  Target target_;
  std::unique_ptr<Dispatch> dispatch_;
  std::vector<Subscriber> retired_;
  std::vector<std::function<void()>> after_start_;
};

}  // namespace rlock::redis
