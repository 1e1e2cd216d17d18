#include "redis/subscriber.hpp"

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "redis/errors.hpp"

namespace rlock::redis {

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
    // Redis 6: "ERR unknown command 'SSUBSCRIBE'..."
    if (e.reply().find("nknown command") == std::string::npos) throw;
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
    // Also once before a timeout is reported: the caller's next request follows it.
    Deadline now = SteadyClock::now();
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

Subscriber Subscriber::join(std::vector<Subscriber> subscribers) {
  Subscriber first = std::move(subscribers.front());
  for (size_t i = 1; i < subscribers.size(); ++i) first.more_.push_back(std::move(subscribers[i]));
  return first;
}

void Subscriber::recheck(Millis every, std::function<bool()> still_serves) {
  recheck_every_ = every;
  still_serves_ = std::move(still_serves);
  next_check_ = SteadyClock::now() + every;
}

}  // namespace rlock::redis
