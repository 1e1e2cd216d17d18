#include "redis/sentinel_router.hpp"

namespace rlock::redis {
namespace {

// How long a connection to the master is used without asking a sentinel again whether it
// is still the master. After a failover the old master stays a writable master for about
// 10 s (until a sentinel converts it): a renewal, release or claim sent there would take
// effect on a server whose data is about to be thrown away, and a renewal would keep a hold
// alive there that the new master may never have got. A request within this long of the
// connection's confirmation (an exec's acquisition right after connecting) is not delayed.
constexpr Millis kConfirmedFor{100};
// What the sentinels have to answer a question in that only steers a request or a
// subscriber (still_master, still_serves): one that does not answer quickly is passed over.
constexpr Millis kQuickAnswer{500};

}  // namespace

bool SentinelRouter::still_master() {
  if (SteadyClock::now() - confirmed_at_ < kConfirmedFor) return true;
  try {
    Deadline until = SteadyClock::now() + std::min(kQuickAnswer, conn_->timeout());
    if (resolver_->named_master(until).describe() != conn_->options().endpoint.describe())
      return false;
  } catch (const Error&) {
    // No sentinel answers: the request goes to the master it knows, and what it writes
    // counts only once a sentinel confirms that server after the write (confirm_master).
  }
  confirmed_at_ = SteadyClock::now();
  return true;
}

bool SentinelRouter::still_serves(const Endpoint& server) {
  if (!resolver_) return true;
  try {
    return resolver_->named_master(SteadyClock::now() + kQuickAnswer).describe() ==
           server.describe();
  } catch (const Error&) {
    return true;  // no sentinel answers: nothing says it changed
  }
}

bool SentinelRouter::confirm_master(const Connection& conn, Deadline until) {
  const std::string server = conn.options().endpoint.describe();
  Endpoint named;
  try {
    named = resolver_->named_master(until);
  } catch (const Error& e) {
    throw UnavailableError("redis at " + server +
                           " answered, but no sentinel confirmed it as the master after the "
                           "write, so it does not count (" +
                           e.what() + ")");
  }
  if (named.describe() != server) {
    if (conn_ && conn_->options().endpoint.describe() == server) conn_.reset();
    return false;
  }
  confirmed_at_ = SteadyClock::now();
  return true;
}

Connection& SentinelRouter::connection_for(std::string_view, const ConnectOptions& options) {
  if (conn_ && !conn_->broken() && still_master()) return *conn_;
  conn_.reset();
  if (resolver_) {
    resolver_->set_timeouts(options);
  } else {
    resolver_.emplace(target_, options);
  }
  // A failover takes the sentinels about a second to agree on: keep asking that long.
  conn_.emplace(
      resolver_->connect_master(SteadyClock::now() + std::max(options.command_timeout, Millis(1))));
  conn_->set_timeout(options.command_timeout);
  confirmed_at_ = SteadyClock::now();
  master_ = conn_->options().endpoint;
  return *conn_;
}

Endpoint SentinelRouter::endpoint_for(std::string_view key, const ConnectOptions& options) {
  if (conn_ && !conn_->broken()) {
    try {
      Connection& conn = connection_for(key, options);  // asks a sentinel when due
      // Within the caller's bound (a watch subscription opened beside a running job).
      conn.set_timeout(options.command_timeout);
      if (role_of(conn) == Role::kMaster) return conn.options().endpoint;
    } catch (const Error&) {
      // Broken or refused: ask the sentinels below.
    }
    conn_.reset();
  }
  return connection_for(key, options).options().endpoint;
}

std::optional<Endpoint> SentinelRouter::known_endpoint_for(std::string_view) const {
  return master_;
}

Router::Next SentinelRouter::after_error(std::string_view, const ReplyError& e, Deadline until,
                                         const ConnectOptions&, int round) {
  const std::string& code = e.code();
  if (code != "READONLY" && code != "LOADING" && code != "MASTERDOWN") return {};
  conn_.reset();
  if (!pause_before_resend(round, until)) return {};
  return {Next::kResend, nullptr};
}

void SentinelRouter::drop_broken() {
  if (conn_ && conn_->broken()) conn_.reset();
}

void SentinelRouter::set_timeout(Millis timeout) {
  if (conn_ && !conn_->broken()) conn_->set_timeout(timeout);
}

std::vector<Endpoint> SentinelRouter::masters(const ConnectOptions& options) {
  return {connection_for("", options).options().endpoint};
}

}  // namespace rlock::redis
