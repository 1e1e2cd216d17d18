#include "redis/dispatch.hpp"

#include <algorithm>

#include "redis/quorum.hpp"
#include "redis/routed_dispatch.hpp"
#include "util/error.hpp"

namespace rlock::redis {

std::string Acks::describe() const {
  std::string of = connected >= 0 ? std::to_string(acked) + " of " + std::to_string(connected) +
                                        " connected replicas"
                                  : std::to_string(acked) + " replicas";
  std::string line = of + " of redis at " + master + " acknowledged within " +
                     format_duration(within) + " (--sync-replicas " + std::to_string(wanted) + ")";
  if (!wait_error.empty()) line += ": WAIT failed: " + wait_error;
  return line;
}

Deadline Dispatch::cleanup_until() const {
  return failed_until_ ? *failed_until_ : SteadyClock::now() + request_timeout();
}

Millis Dispatch::request_timeout() const {
  return timeout_limit_.count() > 0 ? std::min(timeout_limit_, options_.command_timeout)
                                    : options_.command_timeout;
}

ConnectOptions Dispatch::effective_options() const {
  auto opts = options_;
  opts.command_timeout = request_timeout();
  opts.connect_timeout = std::min(opts.connect_timeout, opts.command_timeout);
  return opts;
}

std::unique_ptr<Dispatch> make_dispatch(const Target& target, const ConnectOptions& options,
                                        std::function<void(const std::string&)> notice) {
  if (target.kind != Deployment::kQuorum) {
    const bool replicated =
        target.kind == Deployment::kSentinel || target.kind == Deployment::kCluster;
    return std::make_unique<RoutedDispatch>(make_router(target, std::move(notice)), options,
                                            replicated);
  }
  if (options.sync_replicas > 0) {
    throw UsageError(
        "--sync-replicas has no meaning on a quorum (redis-quorum://): its members are "
        "independent masters and a hold is a majority of them");
  }
  return std::make_unique<Quorum>(target, options);
}

}  // namespace rlock::redis
