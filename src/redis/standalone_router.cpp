#include "redis/standalone_router.hpp"

#include "redis/reply.hpp"
#include "redis/slot_map.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// True when the server says (HELLO's "mode") that it is a cluster node. HELLO needs no ACL
// right, so a standalone server is told apart without a refused CLUSTER SHARDS in its ACL
// LOG. A server that refuses HELLO (one at maxclients, whose refusal the next command
// reports) or answers it without a mode is taken for the one server it is, as a refused
// CLUSTER SHARDS was: a MOVED still makes it the cluster's seed.
bool says_cluster_node(Connection& conn) {
  ReplyPtr hello;
  try {
    hello = conn.command({"HELLO", "2"});
  } catch (const ReplyError&) {
    return false;
  }
  ReplyView fields(hello.get());
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    if (fields.at(i).is_string() && fields.at(i).str() == "mode")
      return fields.at(i + 1).is_string() && fields.at(i + 1).str() == "cluster";
  }
  return false;
}

}  // namespace

StandaloneRouter::StandaloneRouter(Target target, std::function<void(const std::string&)> notice)
    : target_(std::move(target)), notice_(std::move(notice)) {}

void StandaloneRouter::became_cluster(const std::string& why) {
  if (notice_) {
    notice_(target_.endpoint.describe() + " is a node of a Redis Cluster (" + why +
            "): using it as the cluster's seed");
  }
  cluster_ = std::make_unique<ClusterRouter>(target_);
  if (conn_) cluster_->adopt_seed(std::move(*conn_));
  conn_.reset();
}

Connection& StandaloneRouter::server(const ConnectOptions& options) {
  if (conn_ && !conn_->broken()) return *conn_;
  conn_.reset();
  ConnectOptions o = options;
  o.endpoint = target_.endpoint;
  conn_.emplace(Connection::open(o));
  return *conn_;
}

Connection& StandaloneRouter::connection_for(std::string_view key, const ConnectOptions& options) {
  return cluster_ ? cluster_->connection_for(key, options) : server(options);
}

Endpoint StandaloneRouter::endpoint_for(std::string_view key, const ConnectOptions& options) {
  return cluster_ ? cluster_->endpoint_for(key, options) : server(options).options().endpoint;
}

std::optional<Endpoint> StandaloneRouter::known_endpoint_for(std::string_view key) const {
  return cluster_ ? cluster_->known_endpoint_for(key) : target_.endpoint;
}

Router::Next StandaloneRouter::after_error(std::string_view key, const ReplyError& e,
                                           Deadline until, const ConnectOptions& options,
                                           int round) {
  if (cluster_) return cluster_->after_error(key, e, until, options, round);
  const std::string& code = e.code();
  if (code == "MOVED" || code == "ASK") {
    if (!parse_redirect(e.reply(), target_.endpoint.host) || SteadyClock::now() >= until) return {};
    became_cluster("it answered MOVED");
    return cluster_->after_error(key, e, until, options, round);
  }
  if (code == "TRYAGAIN" || code == "CLUSTERDOWN") {
    if (pause_before_resend(round, until)) return {Next::kResend, nullptr};
  }
  return {};
}

void StandaloneRouter::drop_broken() {
  if (cluster_) return cluster_->drop_broken();
  if (conn_ && conn_->broken()) conn_.reset();
}

void StandaloneRouter::set_timeout(Millis timeout) {
  if (cluster_) return cluster_->set_timeout(timeout);
  if (conn_ && !conn_->broken()) conn_->set_timeout(timeout);
}

std::vector<Endpoint> StandaloneRouter::masters(const ConnectOptions& options) {
  if (cluster_) return cluster_->masters(options);
  Connection& conn = server(options);
  const Endpoint self = conn.options().endpoint;
  if (!says_cluster_node(conn)) return {self};
  SlotMap map;
  try {
    map = SlotMap::fetch(conn);
  } catch (const ReplyError&) {
    // "ERR This instance has cluster support disabled": a standalone server. A refusal
    // (NOPERM: a minimal ACL for a standalone server has no cluster commands) says the
    // same for a redis:// URL.
    return {self};
  } catch (const DataError&) {
    // A reply no cluster gives: whatever answers a redis:// URL is scanned as the one
    // server it is, and its own replies are judged there (inspect names what it broke).
    return {self};
  }
  became_cluster("cluster_enabled:1");
  std::vector<Endpoint> out;
  for (const NodeAddress& m : map.masters()) out.push_back(target_.endpoint.at(m.host, m.port));
  return out;
}

}  // namespace rlock::redis
