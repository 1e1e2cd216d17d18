#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "redis/cluster_router.hpp"
#include "redis/router.hpp"

namespace rlock::redis {

// One server (redis://, unix://, rediss://) and its one connection, opened when a request
// first goes there. A server that answers MOVED, or that says it is a cluster node when
// every master is asked for (inspect), is a node of a Redis Cluster: from then on a
// ClusterRouter with it as the seed (and its connection) serves every request, and
// `notice` is told so once.
class StandaloneRouter : public Router {
 public:
  StandaloneRouter(Target target, std::function<void(const std::string&)> notice);

  Connection& connection_for(std::string_view key, const ConnectOptions& options) override;
  Endpoint endpoint_for(std::string_view key, const ConnectOptions& options) override;
  std::optional<Endpoint> known_endpoint_for(std::string_view key) const override;
  Next after_error(std::string_view key, const ReplyError& e, Deadline until,
                   const ConnectOptions& options, int round) override;
  void drop_broken() override;
  void set_timeout(Millis timeout) override;
  Millis recheck_every() const override { return cluster_ ? cluster_->recheck_every() : Millis(0); }
  bool still_serves(const Endpoint& server) override {
    return cluster_ ? cluster_->still_serves(server) : true;
  }
  std::vector<Endpoint> masters(const ConnectOptions& options) override;
  bool cluster() const override { return cluster_ != nullptr; }

 private:
  // The server's connection, opened when absent or broken.
  Connection& server(const ConnectOptions& options);
  // From now on the cluster router serves; `why` is what told.
  void became_cluster(const std::string& why);

  Target target_;
  std::function<void(const std::string&)> notice_;
  std::optional<Connection> conn_;
  std::unique_ptr<ClusterRouter> cluster_;  // once the server turned out to be a cluster node
};

}  // namespace rlock::redis
