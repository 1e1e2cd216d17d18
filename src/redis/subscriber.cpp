#include "redis/subscriber.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "redis/errors.hpp"

namespace rlock::redis {
namespace {

// How often a joined subscriber tries the servers it lacks (see refill): soon after a
// connection killed under the subscription, rarely for a server that stays down.
constexpr Millis kRefillMin{50};
constexpr Millis kRefillMax{1000};

}  // namespace

Subscriber Subscriber::open(const ConnectOptions& options, const std::vector<std::string>& channels,
                            bool classic_allowed, bool master_only,
                            const std::vector<std::string>& classic) {
  Subscriber sub(Connection::open(options));
  std::vector<std::string_view> argv = {"SSUBSCRIBE"};
  argv.insert(argv.end(), channels.begin(), channels.end());
  try {
    if (master_only) {
      // One write: read together, both run before the server's role can change between them
      // (a master demoted after them ends the subscription with sunsubscribe).
      auto replies = sub.conn_.pipeline_views({{"EXISTS", channels.front()}, argv});
      for (size_t i = 0; i < replies.size(); ++i) {
        const redisReply* r = replies[i].get();
        if (r->type != REDIS_REPLY_ERROR) continue;
        ReplyError e(std::string(r->str, r->len));
        if (i > 0 || e.code() != "NOPERM") throw e;
      }
    } else {
      sub.conn_.command(argv);  // returns the first confirmation; the others follow
    }
  } catch (const ReplyError& e) {
    // Redis 6: "ERR unknown command 'SSUBSCRIBE'..." (only its code word is relied on: the
    // classic subscription below listens on both kinds of channel, and its own refusal is
    // the answer).
    if (e.code() != "ERR") throw;
    if (!classic_allowed) {
      throw UnavailableError("redis at " + options.endpoint.describe() +
                             " has no sharded pub/sub (SSUBSCRIBE): rlock needs Redis 7 or "
                             "later on a cluster");
    }
    argv.front() = "SUBSCRIBE";
    argv.insert(argv.end(), classic.begin(), classic.end());
    sub.conn_.command(argv);
    sub.confirmations_due_ = argv.size() - 2;
    return sub;
  }
  sub.confirmations_due_ = channels.size() - 1;
  if (!classic.empty()) {
    std::vector<std::string> subscribe = {"SUBSCRIBE"};
    subscribe.insert(subscribe.end(), classic.begin(), classic.end());
    sub.conn_.send({subscribe});
    sub.await_classic(classic.back());
  }
  return sub;
}

void Subscriber::await_classic(const std::string& last) {
  while (true) {
    auto replies = conn_.receive(1);
    const redisReply* r = replies.front().get();
    if (r->type == REDIS_REPLY_ERROR) throw ReplyError(std::string(r->str, r->len));
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) continue;
    std::string kind = as_string(r->element[0]);
    if (kind == "ssubscribe" && confirmations_due_ > 0) {
      --confirmations_due_;
    } else if (kind == "smessage" || kind == "message") {
      pending_.push_back({Wake::kMessage, as_string(r->element[1]), as_string(r->element[2])});
    } else if (kind == "subscribe" && as_string(r->element[1]) == last) {
      return;
    }
  }
}

Subscriber Subscriber::open_pattern(const ConnectOptions& options, const std::string& pattern) {
  Subscriber sub(Connection::open(options));
  sub.conn_.command({"PSUBSCRIBE", pattern});  // its confirmation
  return sub;
}

// Moves every complete push already read from the socket into pending_.
void Subscriber::read_buffered() {
  while (true) {
    ReplyPtr reply = conn_.buffered_reply("while waiting");
    if (!reply) return;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3) continue;
    std::string kind = as_string(reply->element[0]);
    if (kind == "pmessage" && reply->elements == 4) {
      pending_.push_back(
          {Wake::kMessage, as_string(reply->element[2]), as_string(reply->element[3])});
      continue;
    }
    if (reply->elements != 3) continue;
    if ((kind == "ssubscribe" || kind == "subscribe") && confirmations_due_ > 0) {
      --confirmations_due_;
    } else if (kind == "smessage" || kind == "message") {
      pending_.push_back(
          {Wake::kMessage, as_string(reply->element[1]), as_string(reply->element[2])});
    } else if (kind == "sunsubscribe") {
      throw IoError("redis at " + conn_.options().endpoint.describe() +
                    " ended the subscription to " + as_string(reply->element[1]) +
                    " (its slot moved)");
    }
  }
}

std::vector<int> Subscriber::fds() const {
  std::vector<int> out = {conn_.fd()};
  for (const Subscriber& m : more_) out.push_back(m.conn_.fd());
  return out;
}

Subscriber::Event Subscriber::wait(Deadline until, int interrupt_fd) {
  while (true) {
    read_buffered();
    for (Subscriber& m : more_) {
      m.read_buffered();
      while (!m.pending_.empty()) {
        pending_.push_back(std::move(m.pending_.front()));
        m.pending_.pop_front();
      }
    }
    if (!pending_.empty()) {
      Event e = std::move(pending_.front());
      pending_.pop_front();
      return e;
    }
    Deadline now = SteadyClock::now();
    if (refill_ && now >= next_refill_) {
      bool none_missing = false;
      std::vector<Subscriber> added = refill_(none_missing);
      for (Subscriber& s : added) more_.push_back(std::move(s));
      if (none_missing) refill_ = nullptr;
      next_refill_ = SteadyClock::now() + refill_every_;
      refill_every_ = std::min(2 * refill_every_, kRefillMax);
      if (!added.empty()) return {Wake::kResubscribed, {}, {}};
      now = SteadyClock::now();
    }
    // Also once before a timeout is reported: the caller's next request follows it.
    Deadline wake = check_serves(now, until);
    for (Subscriber& m : more_) wake = std::min(wake, m.check_serves(now, until));
    std::vector<pollfd> fds = {{conn_.fd(), POLLIN, 0}};
    for (const Subscriber& m : more_) fds.push_back({m.conn_.fd(), POLLIN, 0});
    const size_t subscribers = fds.size();
    if (interrupt_fd >= 0) fds.push_back({interrupt_fd, POLLIN, 0});
    if (refill_) wake = std::min(wake, next_refill_);
    auto left = millis_until(wake);
    int rc =
        poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw IoError("lost the connection to redis at " + conn_.options().endpoint.describe() +
                    " while waiting: " + std::strerror(errno));
    }
    if (fds.size() > subscribers && fds.back().revents) return {Wake::kInterrupted, {}, {}};
    bool readable = false;
    for (size_t i = 0; i < subscribers; ++i) {
      if (!fds[i].revents) continue;
      readable = true;
      (i == 0 ? conn_ : more_[i - 1].conn_).read_available("while waiting");
    }
    if (readable) continue;
    if (SteadyClock::now() >= until) return {Wake::kTimeout, {}, {}};
  }
}

namespace {

// Subscriber::open_each's connections, from their login to each one's first confirmation.
class Subscribing {
 public:
  Subscribing(const std::vector<ConnectOptions>& each, const std::vector<std::string>& channels,
              std::vector<std::optional<Connection>> opened, std::vector<std::string>& failures)
      : each_(each),
        failures_(failures),
        conns_(std::move(opened)),
        prelude_(each.size(), 0),
        confirmed_(each.size(), false),
        ssubscribe_{"SSUBSCRIBE"} {
    ssubscribe_.insert(ssubscribe_.end(), channels.begin(), channels.end());
  }

  // Writes each login (AUTH, SELECT) and the SSUBSCRIBE behind it in one write.
  void send_all(Deadline until) {
    for (size_t i = 0; i < conns_.size(); ++i) {
      if (!conns_[i]) continue;
      try {
        std::vector<std::vector<std::string>> write = Connection::login_commands(each_[i].endpoint);
        prelude_[i] = write.size();
        write.push_back(ssubscribe_);
        conns_[i]->set_timeout(std::max(millis_until(until), Millis(1)));
        conns_[i]->send(write);
      } catch (const Error& e) {
        fail(i, e.what());
      }
    }
  }

  // The others are waited for a while too once `needed` confirmed: a request that follows
  // reaches a member after its subscription, or the member's scripts would take the
  // waiter for dead there (no subscriber) and drop it from that member's queue.
  void confirm(size_t needed, Millis patience, Deadline until) {
    const Deadline start = SteadyClock::now();
    std::optional<Deadline> rest_until;
    while (true) {
      if (!rest_until && count() >= needed) {
        rest_until = SteadyClock::now() +
                     std::max<SteadyClock::duration>(patience, 2 * (SteadyClock::now() - start));
      }
      std::vector<pollfd> fds;
      std::vector<size_t> which;
      for (size_t i = 0; i < conns_.size(); ++i) {
        if (!conns_[i] || confirmed_[i]) continue;
        fds.push_back({conns_[i]->fd(), POLLIN, 0});
        which.push_back(i);
      }
      const Millis left = millis_until(rest_until ? std::min(until, *rest_until) : until);
      if (fds.empty() || left.count() <= 0) return;
      int rc = poll(fds.data(), fds.size(),
                    static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
      if (rc < 0 && errno != EINTR) return;
      for (size_t k = 0; rc > 0 && k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        const size_t i = which[k];
        try {
          conns_[i]->read_available("while subscribing");
          advance(i);
        } catch (const Error& e) {
          fail(i, e.what());
        }
      }
    }
  }

  std::optional<Connection>& conn(size_t i) { return conns_[i]; }
  bool confirmed(size_t i) const { return confirmed_[i]; }

  void fail(size_t i, const std::string& why) {
    failures_[i] = why;
    conns_[i].reset();
  }

 private:
  // Reads server i's buffered replies up to its first confirmation.
  void advance(size_t i) {
    Connection& conn = *conns_[i];
    while (!confirmed_[i]) {
      ReplyPtr r = conn.buffered_reply("while subscribing");
      if (!r) return;
      if (r->type == REDIS_REPLY_ERROR) {
        std::string what(r->str, r->len);
        if (prelude_[i] > 0)
          return fail(
              i, "redis at " + each_[i].endpoint.describe() + " refused the connection: " + what);
        if (ReplyError(what).code() != "ERR") {
          return fail(i,
                      "redis at " + each_[i].endpoint.describe() + " refused SSUBSCRIBE: " + what);
        }
        // Redis 6: its scripts fall back to PUBLISH (see open()).
        std::vector<std::string> subscribe = ssubscribe_;
        subscribe.front() = "SUBSCRIBE";
        conn.send({subscribe});
        continue;
      }
      if (prelude_[i] > 0) {
        --prelude_[i];
        continue;
      }
      confirmed_[i] = true;  // the first channel's; the others follow
    }
  }

  size_t count() const {
    return static_cast<size_t>(std::count(confirmed_.begin(), confirmed_.end(), true));
  }

  const std::vector<ConnectOptions>& each_;
  std::vector<std::string>& failures_;
  std::vector<std::optional<Connection>> conns_;
  std::vector<size_t> prelude_;  // AUTH, SELECT replies still to come
  std::vector<bool> confirmed_;
  std::vector<std::string> ssubscribe_;
};

}  // namespace

std::vector<Subscriber> Subscriber::open_each(const std::vector<ConnectOptions>& each,
                                              const std::vector<std::string>& channels,
                                              size_t needed, Millis patience, Deadline until,
                                              std::vector<std::string>& failures) {
  Millis slowest{0};
  Subscribing subscribing(
      each, channels,
      Connection::open_each_unauthenticated(each, needed, patience, until, failures, slowest),
      failures);
  subscribing.send_all(until);
  subscribing.confirm(needed, patience, until);
  std::vector<Subscriber> out;
  for (size_t i = 0; i < each.size(); ++i) {
    if (!subscribing.conn(i)) continue;
    // Still to confirm: the prelude's replies and every confirmation come later, read and
    // passed over by wait() (replies that are no array, ssubscribe counted here).
    const bool confirmed = subscribing.confirmed(i);
    if (!confirmed && millis_until(until).count() <= 0) {
      subscribing.fail(
          i, "redis at " + each[i].endpoint.describe() + " did not confirm the subscription");
      continue;
    }
    Subscriber sub(std::move(*subscribing.conn(i)));
    sub.confirmations_due_ = confirmed ? channels.size() - 1 : channels.size();
    out.push_back(std::move(sub));
  }
  return out;
}

Deadline Subscriber::check_serves(Deadline now, Deadline until) {
  if (!still_serves_) return until;
  if (now >= next_check_ || now >= until) {
    if (!still_serves_()) {
      throw IoError("redis at " + conn_.options().endpoint.describe() + " is no longer the master");
    }
    next_check_ = SteadyClock::now() + recheck_every_;
  }
  return std::min(until, next_check_);
}

Subscriber Subscriber::join(std::vector<Subscriber> subscribers) {
  Subscriber first = std::move(subscribers.front());
  for (size_t i = 1; i < subscribers.size(); ++i) {
    // Flat: wait() polls the connections of more_, not theirs.
    for (Subscriber& m : subscribers[i].more_) first.more_.push_back(std::move(m));
    subscribers[i].more_.clear();
    first.more_.push_back(std::move(subscribers[i]));
  }
  return first;
}

void Subscriber::refill(std::function<std::vector<Subscriber>(bool&)> subscribe) {
  refill_ = std::move(subscribe);
  refill_every_ = kRefillMin;
  next_refill_ = SteadyClock::now();
}

void Subscriber::recheck(Millis every, std::function<bool()> still_serves) {
  recheck_every_ = every;
  still_serves_ = std::move(still_serves);
  next_check_ = SteadyClock::now() + every;
}

}  // namespace rlock::redis
