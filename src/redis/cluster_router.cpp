#include "redis/cluster_router.hpp"

#include <algorithm>
#include <thread>

#include "redis/sentinel_router.hpp"
#include "redis/slot.hpp"

namespace rlock::redis {

// TRYAGAIN: keys of a multi-key request in the middle of a migration; CLUSTERDOWN: a
// failover under way. Both pass within a second or so.
bool pause_before_resend(int round, Deadline until) {
  Millis pause{std::min<long long>(50LL << std::min(round, 4), 500)};
  if (SteadyClock::now() + pause >= until) return false;
  std::this_thread::sleep_for(pause);
  return true;
}

ReplyPtr command_asking(Connection& conn, const std::vector<std::string_view>& argv) {
  auto replies = conn.pipeline({{"ASKING"}, std::vector<std::string>(argv.begin(), argv.end())});
  for (auto& r : replies) {
    if (r->type == REDIS_REPLY_ERROR) throw ReplyError(std::string(r->str, r->len));
  }
  return std::move(replies.back());
}

ClusterRouter::ClusterRouter(Target target, std::function<void(const std::string&)> notice)
    : target_(std::move(target)),
      notice_(std::move(notice)),
      cluster_(target_.kind == Deployment::kCluster) {
  if (target_.kind == Deployment::kStandalone) target_.seeds = {target_.endpoint};
}

void ClusterRouter::became_cluster(const std::string& why) {
  if (cluster_) return;
  cluster_ = true;
  if (notice_) {
    notice_(target_.endpoint.describe() + " is a node of a Redis Cluster (" + why +
            "): using it as the cluster's seed");
  }
}

Connection& ClusterRouter::node(const Endpoint& ep, const ConnectOptions& options) {
  std::string id = ep.describe();
  auto it = nodes_.find(id);
  if (it != nodes_.end() && !it->second.broken()) return it->second;
  if (it != nodes_.end()) nodes_.erase(it);
  ConnectOptions o = options;
  o.endpoint = ep;
  return nodes_.emplace(id, Connection::open(o)).first->second;
}

Endpoint ClusterRouter::seed_endpoint(size_t i) const {
  const Endpoint& s = target_.seeds[i];
  return target_.kind == Deployment::kCluster ? target_.endpoint.at(s.host, s.port) : s;
}

Connection& ClusterRouter::seed(const ConnectOptions& options) {
  for (size_t tried = 0;; ++tried) {
    try {
      return node(seed_endpoint(seed_), options);
    } catch (const UnavailableError&) {
      if (tried + 1 >= target_.seeds.size()) throw;
    }
    seed_ = (seed_ + 1) % target_.seeds.size();
  }
}

Endpoint ClusterRouter::endpoint_for(std::string_view key, const ConnectOptions& options) {
  if (cluster_) {
    auto it = owners_.find(key_slot(key));
    if (it != owners_.end()) return target_.endpoint.at(it->second.host, it->second.port);
  }
  return seed(options).options().endpoint;
}

std::optional<Endpoint> ClusterRouter::known_endpoint_for(std::string_view key) const {
  if (cluster_) {
    auto it = owners_.find(key_slot(key));
    if (it != owners_.end()) return target_.endpoint.at(it->second.host, it->second.port);
  }
  return seed_endpoint(seed_);
}

Connection& ClusterRouter::connection_for(std::string_view key, const ConnectOptions& options) {
  if (cluster_) {
    auto it = owners_.find(key_slot(key));
    if (it != owners_.end())
      return node(target_.endpoint.at(it->second.host, it->second.port), options);
  }
  return seed(options);
}

Router::Next ClusterRouter::after_error(std::string_view key, const ReplyError& e, Deadline until,
                                        const ConnectOptions& options, int round) {
  const std::string& code = e.code();
  if (code == "MOVED" || code == "ASK") {
    std::string asked_host = endpoint_for(key, options).host;
    auto redirect = parse_redirect(e.reply(), asked_host);
    if (!redirect || SteadyClock::now() >= until) return {};
    became_cluster("it answered MOVED");
    if (redirect->kind == Redirect::Kind::kMoved) {
      owners_[redirect->slot] = redirect->to;
      return {Next::kResend, nullptr};
    }
    // ASK: this one request goes to the importing node; the slot's owner stays the same
    // until a MOVED says otherwise.
    return {Next::kAsk, &node(target_.endpoint.at(redirect->to.host, redirect->to.port), options)};
  }
  if (code == "TRYAGAIN" || code == "CLUSTERDOWN") {
    if (pause_before_resend(round, until)) return {Next::kResend, nullptr};
  }
  return {};
}

void ClusterRouter::drop_broken() {
  // A seed that broke (stopped, frozen: it accepts and never answers) is not asked again
  // before the others: the retry goes to the next one, which answers or redirects.
  auto seed_conn = nodes_.find(seed_endpoint(seed_).describe());
  if (seed_conn != nodes_.end() && seed_conn->second.broken())
    seed_ = (seed_ + 1) % target_.seeds.size();
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    it = it->second.broken() ? nodes_.erase(it) : std::next(it);
  }
  // A node that went away may have failed over: ask again where its slots are.
  if (cluster_) owners_.clear();
}

void ClusterRouter::set_timeout(Millis timeout) {
  for (auto& [id, conn] : nodes_) {
    if (!conn.broken()) conn.set_timeout(timeout);
  }
}

std::vector<Endpoint> ClusterRouter::masters(const ConnectOptions& options) {
  Connection& conn = seed(options);
  SlotMap map;
  try {
    map = SlotMap::fetch(conn);
  } catch (const ReplyError&) {
    // "ERR This instance has cluster support disabled": a standalone server. A refusal
    // (NOPERM: a minimal ACL for a standalone server has no cluster commands) says the
    // same for a redis:// URL.
    if (cluster_) throw;
    return {conn.options().endpoint};
  } catch (const DataError&) {
    // A reply no cluster gives: whatever answers a redis:// URL is scanned as the one
    // server it is, and its own replies are judged there (inspect names what it broke).
    if (cluster_) throw;
    return {conn.options().endpoint};
  }
  became_cluster("cluster_enabled:1");
  std::vector<Endpoint> out;
  for (const NodeAddress& m : map.masters()) out.push_back(target_.endpoint.at(m.host, m.port));
  return out;
}

std::unique_ptr<Router> make_router(const Target& target,
                                    std::function<void(const std::string&)> notice) {
  if (target.kind == Deployment::kSentinel) return std::make_unique<SentinelRouter>(target);
  return std::make_unique<ClusterRouter>(target, std::move(notice));
}

}  // namespace rlock::redis
