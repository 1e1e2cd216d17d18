#include "redis/topology.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/time.h>

#include <algorithm>
#include <utility>

#include "redis/errors.hpp"

namespace rlock::redis {
namespace {

timeval to_timeval(Millis ms) {
  long long v = std::max<long long>(ms.count(), 1);
  return timeval{static_cast<time_t>(v / 1000), static_cast<suseconds_t>(v % 1000 * 1000)};
}

void append(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  redisAppendCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data());
}

}  // namespace

Millis Topology::request_timeout() const {
  return timeout_limit_.count() > 0 ? std::min(timeout_limit_, options_.command_timeout)
                                    : options_.command_timeout;
}

Connection& Topology::connection(Millis budget, Millis timeout) {
  if (!conn_ || conn_->broken()) {
    conn_.reset();
    auto opts = options_;
    opts.connect_timeout = std::min(opts.connect_timeout, budget);
    opts.command_timeout = timeout;
    conn_.emplace(Connection::open(opts));
  }
  conn_->set_timeout(timeout);
  return *conn_;
}

template <typename F>
auto Topology::with_retry(Retry retry, std::optional<Deadline> until, F&& attempt) {
  Deadline start = SteadyClock::now();
  Deadline end = until ? *until : start + request_timeout();
  for (int tries = 1;; ++tries) {
    bool last = retry != Retry::kIdempotent || tries >= kMaxTries;
    Millis left = std::max(millis_until(end), Millis(1));
    // Half of what is left: a reply stuck in a dead flow (or on a server that failed over)
    // is asked for again on a fresh connection while there is time for the answer.
    Millis wait = last ? left : std::max(left / 2, Millis(1));
    try {
      auto result = attempt(connection(left, wait));
      failed_until_.reset();
      return result;
    } catch (const IoError& e) {
      // A connection that failed is closed at once: a request that timed out must not
      // wait in its socket for the next use.
      if (conn_ && conn_->broken()) conn_.reset();
      if (last || SteadyClock::now() >= end) {
        failed_until_ = end;
        // The last try's own share of the budget would be a puzzling figure to report.
        if (tries > 1 && dynamic_cast<const TimeoutError*>(&e)) {
          throw TimeoutError("redis at " + options_.endpoint.describe() +
                             " did not answer within " +
                             format_duration(std::chrono::duration_cast<Millis>(end - start)) +
                             " (--timeout; tried " + std::to_string(tries) + " times)");
        }
        throw;
      }
    } catch (const UnavailableError&) {
      failed_until_ = end;
      throw;
    }
  }
}

Deadline Topology::cleanup_until() const {
  return failed_until_ ? *failed_until_ : SteadyClock::now() + request_timeout();
}

void Topology::retire(Subscriber subscriber) { retired_.push_back(std::move(subscriber)); }

void Topology::close_retired() { retired_.clear(); }

void Topology::limit_timeout(Millis timeout) { timeout_limit_ = timeout; }

Reply Topology::run(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry,
                    std::optional<Deadline> until) {
  return Reply(with_retry(retry, until, [&](Connection& c) {
    return run_script(c, script, keys, args, std::exchange(in_flight_, {}));
  }));
}

Reply Topology::command(const std::vector<std::string_view>& argv, Retry retry) {
  return Reply(with_retry(retry, std::nullopt, [&](Connection& c) { return c.command(argv); }));
}

std::vector<Reply> Topology::pipeline(const std::vector<std::vector<std::string>>& commands,
                                      Retry retry) {
  std::vector<Reply> out;
  for (auto& r :
       with_retry(retry, std::nullopt, [&](Connection& c) { return c.pipeline(commands); })) {
    out.emplace_back(std::move(r));
  }
  return out;
}

void Topology::send(const std::vector<std::vector<std::string>>& commands) {
  with_retry(Retry::kNever, std::nullopt, [&](Connection& c) {
    c.send(commands);
    return 0;
  });
}

std::vector<Reply> Topology::receive(size_t replies) {
  std::vector<Reply> out;
  for (auto& r :
       with_retry(Retry::kNever, std::nullopt, [&](Connection& c) { return c.receive(replies); })) {
    out.emplace_back(std::move(r));
  }
  return out;
}

Subscriber Topology::subscribe(const std::vector<std::string>& channels) const {
  return Subscriber::open(options_, channels);
}

bool Topology::send_cleanup(const Script& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args, Millis patience) const noexcept {
  // AUTH, SELECT and EVAL go out in one write, without waiting for any reply in between: a
  // stalled server accepts the connection and the bytes, and runs all three when it resumes.
  const Endpoint& ep = options_.endpoint;
  timeval tv = to_timeval(std::min(options_.connect_timeout, std::max(patience, kCleanupMargin)));
  ContextPtr c(ep.kind == Endpoint::Kind::kUnix
                   ? redisConnectUnixWithTimeout(ep.path.c_str(), tv)
                   : redisConnectWithTimeout(ep.host.c_str(), ep.port, tv));
  if (!c || c->err) return false;
  fcntl(c->fd, F_SETFD, FD_CLOEXEC);
  redisSetTimeout(c.get(), to_timeval(patience));
  size_t expected = 1;
  if (!ep.password.empty()) {
    append(c.get(), ep.user.empty() ? std::vector<std::string>{"AUTH", ep.password}
                                    : std::vector<std::string>{"AUTH", ep.user, ep.password});
    ++expected;
  }
  if (ep.db != 0) {
    append(c.get(), {"SELECT", std::to_string(ep.db)});
    ++expected;
  }
  std::vector<std::string> eval = {"EVAL", script.source, std::to_string(keys.size())};
  eval.insert(eval.end(), keys.begin(), keys.end());
  eval.insert(eval.end(), args.begin(), args.end());
  append(c.get(), eval);
  int done = 0;
  while (!done) {
    if (redisBufferWrite(c.get(), &done) != REDIS_OK) return false;
  }
  // The replies are a courtesy: what matters is that the request is in the server's hands.
  // One deadline for all of them, however slowly they come.
  Deadline until = SteadyClock::now() + patience;
  for (size_t got = 0; got < expected;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(c.get(), &raw) != REDIS_OK) break;
    if (raw) {
      ReplyPtr reply(static_cast<redisReply*>(raw));
      ++got;
      continue;
    }
    pollfd p{c->fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(millis_until(until).count())) <= 0) break;
    if (redisBufferRead(c.get()) != REDIS_OK) break;
  }
  return true;
}

}  // namespace rlock::redis
