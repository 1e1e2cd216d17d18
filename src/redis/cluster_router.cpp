#include "redis/cluster_router.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <thread>

#include "redis/sentinel_router.hpp"
#include "redis/slot.hpp"
#include "redis/standalone_router.hpp"

namespace rlock::redis {
namespace {

// What a waiter's check of its server (still_serves) may take at most: another node's slot
// map, asked once a second while the waiter sleeps.
constexpr Millis kRecheckTimeout{1000};

// True when the server closed `conn` while it was idle (a killed server's sockets are
// closed by its kernel): a subscriber opened there would be refused. Reads nothing.
bool closed_by_peer(const Connection& conn) {
  char byte;
  ssize_t n = ::recv(conn.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace

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

ClusterRouter::ClusterRouter(Target target) : target_(std::move(target)) {
  if (target_.kind == Deployment::kStandalone) target_.seeds = {target_.endpoint};
}

void ClusterRouter::adopt_seed(Connection conn) {
  std::string id = conn.options().endpoint.describe();
  nodes_.insert_or_assign(std::move(id), std::move(conn));
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

const NodeAddress* ClusterRouter::owner_of(int slot) const {
  auto it = owners_.find(slot);
  if (it != owners_.end()) return &it->second;
  return map_ ? map_->master_of(slot) : nullptr;
}

std::optional<SlotMap> ClusterRouter::map_without(const std::string& avoid,
                                                  const ConnectOptions& options) {
  std::vector<Endpoint> ask;
  for (size_t i = 0; i < target_.seeds.size(); ++i)
    ask.push_back(seed_endpoint((seed_ + i) % target_.seeds.size()));
  if (map_) {
    for (const SlotRange& r : map_->ranges()) {
      ask.push_back(endpoint_of(r.master));
      for (const NodeAddress& replica : r.replicas) ask.push_back(endpoint_of(replica));
    }
  }
  std::set<std::string> asked = {avoid};
  for (const Endpoint& ep : ask) {
    if (!asked.insert(ep.describe()).second) continue;
    try {
      Connection& conn = node(ep, options);
      conn.set_timeout(options.command_timeout);
      return SlotMap::fetch(conn);
    } catch (const UnavailableError&) {
      // Down or frozen as well: the next one.
    } catch (const DataError&) {
    } catch (const ReplyError&) {
      return std::nullopt;  // refused (an ACL without cluster|shards): so are the others
    }
  }
  return std::nullopt;
}

void ClusterRouter::adopt(SlotMap map, const std::string& gone) {
  map_ = std::move(map);
  owners_.clear();
  nodes_.erase(gone);
}

bool ClusterRouter::still_serves(const Endpoint& server) {
  ConnectOptions o = options_;
  o.command_timeout = std::min(o.command_timeout, kRecheckTimeout);
  o.connect_timeout = std::min(o.connect_timeout, o.command_timeout);
  std::string id = server.describe();
  std::optional<SlotMap> map = map_without(id, o);
  if (!map) return true;  // no other node answers: nothing says it changed
  for (const NodeAddress& m : map->masters()) {
    if (endpoint_of(m).describe() == id) return true;
  }
  adopt(std::move(*map), id);
  return false;
}

Endpoint ClusterRouter::endpoint_for(std::string_view key, const ConnectOptions& options) {
  options_ = options;
  Connection* conn = &connection_for(key, options);
  if (closed_by_peer(*conn)) {
    // Its server died since the last request: connection_for finds who took over.
    nodes_.erase(conn->options().endpoint.describe());
    conn = &connection_for(key, options);
  }
  return conn->options().endpoint;
}

std::optional<Endpoint> ClusterRouter::known_endpoint_for(std::string_view key) const {
  if (const NodeAddress* owner = owner_of(key_slot(key))) return endpoint_of(*owner);
  return seed_endpoint(seed_);
}

Connection& ClusterRouter::connection_for(std::string_view key, const ConnectOptions& options) {
  int slot = key_slot(key);
  // A refused owner is asked about again within the request's time, as a failover takes.
  Deadline until = SteadyClock::now() + options.command_timeout;
  for (int round = 0;; ++round) {
    const NodeAddress* owner = owner_of(slot);
    if (!owner) return seed(options);
    NodeAddress was = *owner;
    Endpoint ep = endpoint_of(was);
    try {
      return node(ep, options);
    } catch (const UnavailableError& e) {
      // A dead master: another node's map says whether its replica has taken over yet.
      ConnectOptions ask = options;
      ask.command_timeout = std::max(millis_until(until), Millis(1));
      ask.connect_timeout = std::min(ask.connect_timeout, ask.command_timeout);
      std::optional<SlotMap> map = map_without(ep.describe(), ask);
      if (!map) throw;
      adopt(std::move(*map), ep.describe());
      const NodeAddress* now = owner_of(slot);
      // Still named when this try's time is up: an I/O error, so that the request's next
      // try (Topology) asks again within its budget.
      if (now && now->same_address(was) && !pause_before_resend(round, until))
        throw IoError(e.what());
    }
  }
}

Router::Next ClusterRouter::after_error(std::string_view key, const ReplyError& e, Deadline until,
                                        const ConnectOptions& options, int round) {
  const std::string& code = e.code();
  if (code == "MOVED" || code == "ASK") {
    std::string asked_host = known_endpoint_for(key)->host;
    auto redirect = parse_redirect(e.reply(), asked_host);
    if (!redirect || SteadyClock::now() >= until) return {};
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
  owners_.clear();
  map_.reset();
}

void ClusterRouter::set_timeout(Millis timeout) {
  for (auto& [id, conn] : nodes_) {
    if (!conn.broken()) conn.set_timeout(timeout);
  }
}

std::vector<Endpoint> ClusterRouter::masters(const ConnectOptions& options) {
  SlotMap map = SlotMap::fetch(seed(options));
  std::vector<Endpoint> out;
  for (const NodeAddress& m : map.masters()) out.push_back(target_.endpoint.at(m.host, m.port));
  return out;
}

std::unique_ptr<Router> make_router(const Target& target,
                                    std::function<void(const std::string&)> notice) {
  if (target.kind == Deployment::kSentinel) return std::make_unique<SentinelRouter>(target);
  if (target.kind == Deployment::kCluster) return std::make_unique<ClusterRouter>(target);
  return std::make_unique<StandaloneRouter>(target, std::move(notice));
}

}  // namespace rlock::redis
