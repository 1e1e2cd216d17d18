#include "redis/sentinel_router.hpp"

namespace rlock::redis {

Connection& SentinelRouter::connection_for(std::string_view, const ConnectOptions& options) {
  if (conn_ && !conn_->broken()) return *conn_;
  conn_.reset();
  if (!resolver_) resolver_.emplace(target_, options);
  // A failover takes the sentinels about a second to agree on: keep asking that long.
  conn_.emplace(resolver_->connect_master(SteadyClock::now() + options.command_timeout));
  conn_->set_timeout(options.command_timeout);
  master_ = conn_->options().endpoint;
  return *conn_;
}

Endpoint SentinelRouter::endpoint_for(std::string_view key, const ConnectOptions& options) {
  if (conn_ && !conn_->broken()) {
    try {
      if (role_of(*conn_) == Role::kMaster) return conn_->options().endpoint;
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
