#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace rlock::redis {

// A connection in subscribe mode, used to sleep until something is published. It never
// lets a socket timeout end a wait: it polls the socket itself with the wait's own
// deadline, so a long --wait is not cut short by --timeout.
class Subscriber {
 public:
  // kResubscribed: a server the subscriber lacked is subscribed to again (see refill);
  // what was published there meanwhile was missed.
  enum class Wake { kMessage, kTimeout, kInterrupted, kResubscribed };
  struct Event {
    Wake wake = Wake::kTimeout;
    std::string channel;  // kMessage: where it was published (a pattern's: the matching one)
    std::string payload;  // kMessage: what
  };

  // Opens its own connection and subscribes to all `channels` (all of one hash tag) with
  // SSUBSCRIBE: sharded pub/sub, the only kind a cluster delivers on the node that owns the
  // slot, and what the scripts publish with (common.lua's publish()). A server without it
  // (Redis 6) gets SUBSCRIBE when `classic_allowed` (its scripts fall back to PUBLISH);
  // otherwise (a cluster) it throws UnavailableError. Throws UnavailableError, and
  // ReplyError for a redirect (MOVED).
  //
  // `master_only` (a cluster): subscribes only on the master of the channels' slot, else
  // throws its MOVED. A replica accepts SSUBSCRIBE for its master's slots without a
  // redirect, and hears the master's SPUBLISH only once the master knows it as its
  // replica: a master demoted by a failover ends its subscriptions (sunsubscribe) and,
  // subscribed again at once, misses the new master's messages until the new master hears
  // from it over the cluster bus (about 250 ms with cluster-node-timeout 1000, measured on
  // 7.0.15), just when the release that follows a failover comes. So EXISTS on the first
  // channel's name (a keyed read that only the slot's master serves: a replica without
  // READONLY, like any other node, answers MOVED) goes in the same write just before the
  // SSUBSCRIBE; a user refused EXISTS (NOPERM) subscribes unconfirmed.
  //
  // `classic` channels are subscribed with SUBSCRIBE on the same connection (another
  // client's channel that it publishes on with PUBLISH); open() returns once the server
  // confirmed them, so that nothing published after it is missed.
  static Subscriber open(const ConnectOptions& options, const std::vector<std::string>& channels,
                         bool classic_allowed = true, bool master_only = false,
                         const std::vector<std::string>& classic = {});
  // Opens its own connection and subscribes to the channels matching `pattern` (PSUBSCRIBE:
  // classic pub/sub, which is how a server sends its keyspace notifications). Throws
  // UnavailableError, and ReplyError when the server refuses (NOPERM on the channels).
  static Subscriber open_pattern(const ConnectOptions& options, const std::string& pattern);

  // Sleeps until a message arrives, `until` passes, or `interrupt_fd` (if >= 0) becomes
  // readable. Messages that arrived earlier come first, in publish order. Throws IoError
  // when the connection drops, or when the server ends the subscription by itself (an
  // unsolicited sunsubscribe: the slot moved to another node), so that the caller
  // subscribes again where the channel is now.
  Event wait(Deadline until, int interrupt_fd = -1);
  // The sockets wait() reads (its own and those joined to it), for a caller that polls
  // them with other descriptors and calls wait() with a deadline of now when one is ready.
  std::vector<int> fds() const;

  // Makes wait() call `still_serves` every `every` while it sleeps, and before it reports
  // a timeout (the caller's next request follows): false ends the wait
  // with IoError, as a dropped connection does. For a server that stops serving the
  // channels without a word to its subscribers (a Sentinel master demoted by a failover
  // keeps them, and nothing is published there any more).
  void recheck(Millis every, std::function<bool()> still_serves);

  // Subscribes to `channels` (as open() does, without `classic` ones) on every server of
  // `each` at once: connections opened together (Connection::open_each_unauthenticated,
  // `patience` for the ones not open once `needed` are), then each's AUTH, SELECT and
  // SSUBSCRIBE in one write, and the confirmations read as they come. Returns once every
  // server confirmed, or `needed` did and the rest had `patience` (or twice what those
  // took) more, or at `until`: those, and the servers still to confirm (their confirmation
  // and messages arrive later; a stopped server holds up no one). `failures[i]` says why
  // server i is not among them ("" when it is). Never throws.
  static std::vector<Subscriber> open_each(const std::vector<ConnectOptions>& each,
                                           const std::vector<std::string>& channels, size_t needed,
                                           Millis patience, Deadline until,
                                           std::vector<std::string>& failures);

  // One subscriber over several (a quorum's members, each subscribed to the same channels;
  // a cluster's nodes, each to its slots' channels): wait() returns a message from any of
  // them; one that drops or no longer serves its channels (recheck) ends the wait with
  // IoError. A joined subscriber's refill is not carried over.
  static Subscriber join(std::vector<Subscriber> subscribers);
  // For a joined subscriber that lacks some of its servers (a quorum member down, or whose
  // connection failed while it subscribed): wait() calls `subscribe` at once and then every
  // 50 ms, twice as long each time up to 1 s, and joins the subscribers it returns
  // (reporting kResubscribed), until a call sets its argument (none missing any more).
  void refill(std::function<std::vector<Subscriber>(bool& none_missing)> subscribe);

 private:
  explicit Subscriber(Connection conn) : conn_(std::move(conn)) {}
  void read_buffered();
  // Runs still_serves when its recheck is due (or `until` passed), throwing IoError when
  // it says no; returns when the next one is due (`until` without a recheck).
  Deadline check_serves(Deadline now, Deadline until);
  // Reads pushes until the SUBSCRIBE of `last` is confirmed, keeping messages and counting
  // the other confirmations.
  void await_classic(const std::string& last);

  Connection conn_;
  std::deque<Event> pending_;
  size_t confirmations_due_ = 0;
  Millis recheck_every_{0};
  std::function<bool()> still_serves_;
  Deadline next_check_{};
  std::vector<Subscriber> more_;  // joined (see join)
  std::function<std::vector<Subscriber>(bool&)> refill_;
  Millis refill_every_{0};
  Deadline next_refill_{};
};

}  // namespace rlock::redis
