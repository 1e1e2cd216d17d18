#pragma once

#include <optional>

#include "redis/router.hpp"
#include "redis/sentinel.hpp"

namespace rlock::redis {

// The master of a Sentinel deployment, found through the sentinels (SentinelResolver) when
// the first request needs it and again whenever it stops being the master: a lost
// connection, READONLY (a demoted master), LOADING, MASTERDOWN. A request refused with one
// of those replies was not executed, so it is resent to the new master within its timeout.
// A connection is used without a question for kConfirmedFor (see sentinel_router.cpp) after
// the sentinels named its server; past that, the next request asks a sentinel first, and
// goes to the new master when the sentinels name another. That question only steers: a
// script's reply counts once a sentinel named its server after it (confirm_master).
class SentinelRouter : public Router {
 public:
  explicit SentinelRouter(Target target) : target_(std::move(target)) {}

  Connection& connection_for(std::string_view key, const ConnectOptions& options) override;
  // The master, confirmed with ROLE on the command connection first: a subscription on a
  // demoted master would wait for messages that are published elsewhere.
  Endpoint endpoint_for(std::string_view key, const ConnectOptions& options) override;
  std::optional<Endpoint> known_endpoint_for(std::string_view key) const override;
  Next after_error(std::string_view key, const ReplyError& e, Deadline until,
                   const ConnectOptions& options, int round) override;
  void drop_broken() override;
  void set_timeout(Millis timeout) override;
  std::vector<Endpoint> masters(const ConnectOptions& options) override;
  bool cluster() const override { return false; }
  // A demoted master keeps its subscribers: a waiter asks the sentinels once a second.
  Millis recheck_every() const override { return Millis(1000); }
  // False when a sentinel names another master than `server`.
  bool still_serves(const Endpoint& server) override;
  // Asks the sentinels (by `until`) whether `conn`'s server is still the master: false
  // (and the connection dropped) when they name another; UnavailableError when none
  // answers: a client cut off from the sentinels must not count a write on a master that
  // may have been demoted meanwhile (it stays writable for about 10 s).
  bool confirm_master(const Connection& conn, Deadline until) override;

 private:
  // False when the sentinels name another master than conn_'s (asked at most once per
  // kConfirmedFor; a sentinel that does not answer confirms nothing and refutes nothing).
  bool still_master();

  Target target_;
  std::optional<SentinelResolver> resolver_;
  std::optional<Connection> conn_;
  std::optional<Endpoint> master_;  // where conn_ went last
  Deadline confirmed_at_{};         // when the sentinels last named conn_'s server
};

}  // namespace rlock::redis
