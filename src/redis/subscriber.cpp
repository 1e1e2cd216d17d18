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
    if (still_serves_ && (now >= next_check_ || now >= until)) {
      if (!still_serves_()) {
        throw IoError("redis at " + conn_.options().endpoint.describe() +
                      " is no longer the master");
      }
      next_check_ = SteadyClock::now() + recheck_every_;
    }
    std::vector<pollfd> fds = {{conn_.fd(), POLLIN, 0}};
    for (const Subscriber& m : more_) fds.push_back({m.conn_.fd(), POLLIN, 0});
    const size_t subscribers = fds.size();
    if (interrupt_fd >= 0) fds.push_back({interrupt_fd, POLLIN, 0});
    Deadline wake = still_serves_ ? std::min(until, next_check_) : until;
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

std::vector<Subscriber> Subscriber::open_each(const std::vector<ConnectOptions>& each,
                                              const std::vector<std::string>& channels,
                                              size_t needed, Millis patience, Deadline until,
                                              std::vector<std::string>& failures) {
  const size_t n = each.size();
  std::vector<std::optional<Subscriber>> subs(n);
  std::vector<size_t> prelude(n, 0);  // AUTH, SELECT replies still to come
  std::vector<bool> confirmed(n, false);
  std::vector<std::string> ssubscribe = {"SSUBSCRIBE"};
  ssubscribe.insert(ssubscribe.end(), channels.begin(), channels.end());
  auto fail = [&](size_t i, const std::string& why) {
    failures[i] = why;
    subs[i].reset();
  };
  Millis slowest{0};
  std::vector<std::optional<Connection>> opened =
      Connection::open_each_unauthenticated(each, needed, patience, until, failures, slowest);
  for (size_t i = 0; i < n; ++i) {
    if (!opened[i]) continue;
    try {
      subs[i].emplace(Subscriber(std::move(*opened[i])));
      std::vector<std::vector<std::string>> write = Connection::login_commands(each[i].endpoint);
      prelude[i] = write.size();
      write.push_back(ssubscribe);
      subs[i]->conn_.set_timeout(std::max(millis_until(until), Millis(1)));
      subs[i]->conn_.send(write);
    } catch (const Error& e) {
      fail(i, e.what());
    }
  }
  // Reads server i's buffered replies up to its first confirmation.
  auto advance = [&](size_t i) {
    Subscriber& sub = *subs[i];
    while (!confirmed[i]) {
      ReplyPtr r = sub.conn_.buffered_reply("while subscribing");
      if (!r) return;
      if (r->type == REDIS_REPLY_ERROR) {
        std::string what(r->str, r->len);
        if (prelude[i] > 0)
          return fail(
              i, "redis at " + each[i].endpoint.describe() + " refused the connection: " + what);
        if (ReplyError(what).code() != "ERR") {
          return fail(i,
                      "redis at " + each[i].endpoint.describe() + " refused SSUBSCRIBE: " + what);
        }
        // Redis 6: its scripts fall back to PUBLISH (see open()).
        std::vector<std::string> subscribe = ssubscribe;
        subscribe.front() = "SUBSCRIBE";
        sub.conn_.send({subscribe});
        continue;
      }
      if (prelude[i] > 0) {
        --prelude[i];
        continue;
      }
      confirmed[i] = true;  // the first channel's; the others follow
      sub.confirmations_due_ = channels.size() - 1;
    }
  };
  auto count = [&] {
    size_t c = 0;
    for (size_t i = 0; i < n; ++i) c += confirmed[i];
    return c;
  };
  // The others are waited for a while too once `needed` confirmed: a request that follows
  // reaches a member after its subscription, or the member's scripts would take the
  // waiter for dead there (no subscriber) and drop it from that member's queue.
  const Deadline start = SteadyClock::now();
  std::optional<Deadline> rest_until;
  while (true) {
    if (!rest_until && count() >= needed) {
      rest_until = SteadyClock::now() +
                   std::max<SteadyClock::duration>(patience, 2 * (SteadyClock::now() - start));
    }
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < n; ++i) {
      if (!subs[i] || confirmed[i]) continue;
      fds.push_back({subs[i]->conn_.fd(), POLLIN, 0});
      which.push_back(i);
    }
    const Millis left = millis_until(rest_until ? std::min(until, *rest_until) : until);
    if (fds.empty() || left.count() <= 0) break;
    int rc =
        poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (rc < 0 && errno != EINTR) break;
    for (size_t k = 0; rc > 0 && k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      const size_t i = which[k];
      try {
        subs[i]->conn_.read_available("while subscribing");
        advance(i);
      } catch (const Error& e) {
        fail(i, e.what());
      }
    }
  }
  std::vector<Subscriber> out;
  for (size_t i = 0; i < n; ++i) {
    if (!subs[i]) continue;
    if (!confirmed[i]) {
      // Still to confirm: the prelude's replies and every confirmation come later, read
      // and passed over by wait() (replies that are no array, ssubscribe counted here).
      subs[i]->confirmations_due_ = channels.size();
      if (millis_until(until).count() <= 0) {
        fail(i, "redis at " + each[i].endpoint.describe() + " did not confirm the subscription");
        continue;
      }
    }
    out.push_back(std::move(*subs[i]));
  }
  return out;
}

Subscriber Subscriber::join(std::vector<Subscriber> subscribers) {
  Subscriber first = std::move(subscribers.front());
  for (size_t i = 1; i < subscribers.size(); ++i) first.more_.push_back(std::move(subscribers[i]));
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
