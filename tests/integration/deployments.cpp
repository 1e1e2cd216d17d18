#include "deployments.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace rlock::test {
namespace {

// Bring-up waits, not test assertions: they only poll state that offers no event.
constexpr auto kPoll = 20ms;

bool port_bindable(int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

// A command that may fail while the deployment settles: an error reply counts as "not yet".
std::vector<std::string> try_cmd(const RedisServer& server, const std::vector<std::string>& argv) {
  try {
    return server.cmd(argv);
  } catch (const RedisError&) {
    return {};
  }
}

std::string role_of(const RedisServer& server) {
  auto role = try_cmd(server, {"ROLE"});
  return role.empty() ? "" : role[0];
}

// The values of every `field` in a flattened reply of field/value lists (SENTINEL REPLICAS).
std::vector<std::pair<std::string, std::string>> pairs_of(const std::vector<std::string>& flat) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
  return out;
}

bool replica_in_sync(const RedisServer& replica) {
  auto info = info_fields([&] {
    auto r = try_cmd(replica, {"INFO", "replication"});
    return r.empty() ? std::string() : r[0];
  }());
  return info["role"] == "slave" && info["master_link_status"] == "up";
}

std::chrono::milliseconds left_until(Clock::time_point until) {
  return std::max(0ms, std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
}

void await(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
           const std::string& what) {
  if (!poll_until(condition, timeout, kPoll))
    throw std::runtime_error("deployment: " + what + " within " + std::to_string(timeout.count()) +
                             " ms");
}

// Owner port of every slot (0: none) as `server` sees it, from CLUSTER NODES.
std::vector<int> slot_owners(const RedisServer& server) {
  std::vector<int> owners(16384, 0);
  auto reply = try_cmd(server, {"CLUSTER", "NODES"});
  if (reply.empty()) return owners;
  std::istringstream lines(reply[0]);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, address, flags, master, ping, pong, epoch, link;
    fields >> id >> address >> flags >> master >> ping >> pong >> epoch >> link;
    if (flags.find("master") == std::string::npos || flags.find("fail") != std::string::npos)
      continue;
    int port = std::stoi(address.substr(address.rfind(':', address.find('@')) + 1));
    std::string range;
    while (fields >> range) {
      if (range.front() == '[') continue;  // a slot being migrated or imported
      size_t dash = range.find('-');
      int first = std::stoi(range.substr(0, dash));
      int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
      for (int s = first; s <= last; ++s) owners[s] = port;
    }
  }
  return owners;
}

}  // namespace

std::map<std::string, std::string> info_fields(const std::string& info) {
  std::map<std::string, std::string> out;
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon != std::string::npos) out[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return out;
}

int free_cluster_port() {
  static std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 55535);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    int port = pick(random);
    if (port_bindable(port) && port_bindable(port + 10000)) return port;
  }
  throw std::runtime_error("no free port pair (port, port + 10000) below 55536");
}

// --- Sentinel ----------------------------------------------------------------------------

SentinelSetup::SentinelSetup(SentinelSetupOptions options) : options_(std::move(options)) {
  auto start = Clock::now();
  data_.reserve(2);
  sentinels_.reserve(3);
  const std::string& pw = options_.data_password;
  std::vector<std::string> data_config{"repl-diskless-sync-delay 0", "repl-timeout 5"};
  if (!pw.empty()) data_config.push_back("masterauth " + pw);
  data_.emplace_back(
      RedisOptions{.requirepass = pw, .config = data_config, .test_topology = false});
  auto replica_config = data_config;
  replica_config.push_back("replicaof 127.0.0.1 " + std::to_string(data_[0].port()));
  data_.emplace_back(
      RedisOptions{.requirepass = pw, .config = replica_config, .test_topology = false});
  await([&] { return replica_in_sync(data_[1]); }, 10s, "the replica did not sync");

  const std::string& name = options_.master_name;
  std::vector<std::string> sentinel_config{
      "sentinel monitor " + name + " 127.0.0.1 " + std::to_string(data_[0].port()) + " 2",
      "sentinel down-after-milliseconds " + name + " 1000",
      "sentinel failover-timeout " + name + " 3000",
  };
  if (!pw.empty()) sentinel_config.push_back("sentinel auth-pass " + name + " " + pw);
  if (!options_.sentinel_password.empty())
    sentinel_config.push_back("sentinel sentinel-pass " + options_.sentinel_password);
  for (int i = 0; i < 3; ++i) {
    sentinels_.emplace_back(RedisOptions{.requirepass = options_.sentinel_password,
                                         .config = sentinel_config,
                                         .args = {"--sentinel"},
                                         .test_topology = false});
  }
  await_sentinels_ready(data_[1], 20s);
  bring_up_ = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

std::string SentinelSetup::url() const {
  std::string out = "redis-sentinel://";
  for (size_t i = 0; i < sentinels_.size(); ++i) {
    if (i) out += ",";
    out += "127.0.0.1:" + std::to_string(sentinels_[i].port());
  }
  return out + "/" + options_.master_name;
}

int SentinelSetup::port_named_by(size_t sentinel) const {
  auto addr = try_cmd(sentinels_.at(sentinel),
                      {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name});
  return addr.size() == 2 && !addr[1].empty() ? std::stoi(addr[1]) : 0;
}

void SentinelSetup::await_sentinels_ready(const RedisServer& replica,
                                          std::chrono::milliseconds timeout) {
  const std::string& name = options_.master_name;
  std::string replica_port = std::to_string(replica.port());
  await(
      [&] {
        for (const RedisServer& s : sentinels_) {
          if (s.pid() < 0) continue;
          bool knows_replica = false;
          std::string port;
          for (const auto& [field, value] : pairs_of(try_cmd(s, {"SENTINEL", "REPLICAS", name}))) {
            if (field == "port") port = value;
            if (field == "flags" && port == replica_port && value == "slave") knows_replica = true;
          }
          size_t others = 0;
          for (const auto& [field, value] : pairs_of(try_cmd(s, {"SENTINEL", "SENTINELS", name})))
            others += field == "name";
          if (!knows_replica || others + 1 < sentinels_.size()) return false;
        }
        return true;
      },
      timeout, "the sentinels did not all learn the replica and each other");
}

RedisServer& SentinelSetup::current_master(std::chrono::milliseconds timeout) {
  RedisServer* master = nullptr;
  await(
      [&] {
        int port = 0;
        for (size_t i = 0; i < sentinels_.size(); ++i) {
          if (sentinels_[i].pid() < 0) continue;
          int named = port_named_by(i);
          if (named == 0 || (port != 0 && named != port)) return false;
          port = named;
        }
        for (RedisServer& d : data_) {
          if (d.port() == port && role_of(d) == "master") master = &d;
        }
        return master != nullptr;
      },
      timeout, "the sentinels did not agree on a master that says so");
  return *master;
}

void SentinelSetup::settle(std::chrono::milliseconds timeout) {
  auto until = deadline(timeout);
  RedisServer& master = current_master(timeout);
  for (RedisServer& d : data_) {
    if (&d == &master || d.pid() < 0) continue;
    if (role_of(d) == "master") d.cmd({"REPLICAOF", "127.0.0.1", std::to_string(master.port())});
    await([&] { return replica_in_sync(d); }, left_until(until),
          "a data node did not become an in-sync replica");
    await_sentinels_ready(d, left_until(until));
  }
}

RedisServer& SentinelSetup::failover(std::chrono::milliseconds timeout) {
  auto until = deadline(timeout);
  settle(timeout);
  RedisServer& old_master = current_master(left_until(until));
  RedisServer& next = &old_master == &data_[0] ? data_[1] : data_[0];
  RedisServer* asked = nullptr;
  for (RedisServer& s : sentinels_) {
    if (!asked && s.pid() > 0) asked = &s;
  }
  if (!asked) throw std::runtime_error("deployment: no sentinel runs");
  // NOGOODSLAVE while the sentinel's view of the replica is not fresh enough: ask again.
  await(
      [&] {
        try {
          asked->cmd({"SENTINEL", "FAILOVER", options_.master_name});
          return true;
        } catch (const RedisError& e) {
          return std::string(e.what()).find("INPROG") != std::string::npos;
        }
      },
      left_until(until), "SENTINEL FAILOVER was refused");
  await([&] { return &current_master(left_until(until)) == &next; }, left_until(until),
        "the failover did not complete");
  return next;
}

// --- Cluster -----------------------------------------------------------------------------

ClusterSetup::ClusterSetup(ClusterOptions options) : options_(std::move(options)) {
  auto start = Clock::now();
  const std::string& pw = options_.password;
  std::vector<std::string> config{"cluster-enabled yes", "cluster-config-file nodes.conf",
                                  "cluster-node-timeout 1000", "repl-diskless-sync-delay 0",
                                  // Any replica may take over, however long it was cut off.
                                  "cluster-replica-validity-factor 0"};
  if (!pw.empty()) config.push_back("masterauth " + pw);
  int count = options_.masters * (1 + options_.replicas_per_master);
  nodes_.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    nodes_.emplace_back(RedisOptions{.requirepass = pw,
                                     .config = config,
                                     .pick_port = free_cluster_port,
                                     .test_topology = false});
  }
  std::vector<std::string> argv{"redis-cli", "--cluster", "create"};
  for (const RedisServer& n : nodes_) argv.push_back("127.0.0.1:" + std::to_string(n.port()));
  argv.insert(argv.end(), {"--cluster-replicas", std::to_string(options_.replicas_per_master),
                           "--cluster-yes"});
  Env env;
  if (!pw.empty()) env.emplace_back("REDISCLI_AUTH", pw);
  RunResult created = run(argv, env, 60s);
  if (created.status != 0)
    throw std::runtime_error("redis-cli --cluster create failed:\n" + created.out + created.err);
  await_converged(20s);
  await(
      [&] {
        auto reps = replicas();
        return static_cast<int>(reps.size()) == options_.masters * options_.replicas_per_master &&
               std::all_of(reps.begin(), reps.end(),
                           [](RedisServer* r) { return replica_in_sync(*r); });
      },
      20s, "the replicas did not sync");
  bring_up_ = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

std::string ClusterSetup::url() const {
  std::string out = "redis-cluster://";
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (i) out += ",";
    out += "127.0.0.1:" + std::to_string(nodes_[i].port());
  }
  return out;
}

RedisServer& ClusterSetup::node_on_port(int port) {
  for (RedisServer& n : nodes_) {
    if (n.port() == port) return n;
  }
  throw std::runtime_error("no cluster node on port " + std::to_string(port));
}

std::vector<int> ClusterSetup::slot_owner_ports(size_t asked) const {
  return slot_owners(nodes_.at(asked));
}

RedisServer& ClusterSetup::master_of_slot(int slot, size_t asked) {
  int port = slot_owners(nodes_.at(asked)).at(static_cast<size_t>(slot));
  return node_on_port(port);
}

std::vector<RedisServer*> ClusterSetup::masters() {
  std::vector<RedisServer*> out;
  for (RedisServer& n : nodes_) {
    if (n.pid() > 0 && role_of(n) == "master") out.push_back(&n);
  }
  return out;
}

std::vector<RedisServer*> ClusterSetup::replicas() {
  std::vector<RedisServer*> out;
  for (RedisServer& n : nodes_) {
    if (n.pid() > 0 && role_of(n) == "slave") out.push_back(&n);
  }
  return out;
}

RedisServer& ClusterSetup::failover(RedisServer& master, std::chrono::milliseconds timeout) {
  RedisServer* promoted = nullptr;
  for (RedisServer* r : replicas()) {
    auto info = info_fields(r->cmd_str({"INFO", "replication"}));
    if (info["master_port"] == std::to_string(master.port())) promoted = r;
  }
  if (!promoted) throw std::runtime_error("deployment: the master has no replica to promote");
  // Redis 7.0 keeps a replica's won election (its failover_auth_time, epoch and votes) after
  // it took over. Demoted again and asked for a manual failover within auth_retry_time
  // (2 * max(2 * cluster-node-timeout, 2 s): 4 s here), it logs "Failover election won"
  // at once, without an election, and takes over with its old, lower epoch; the others
  // overrule it within milliseconds, and its master stays paused for writes until the manual
  // failover times out (5 s) and keeps the slots (measured on 7.0.15; Valkey resets that
  // state once the election is won, valkey-io/valkey#782).
  auto last = promoted_at_.find(promoted->port());
  if (last != promoted_at_.end()) std::this_thread::sleep_until(last->second + 4200ms);
  auto until = deadline(timeout);
  // A manual failover starts with the replica's MFSTART to its master, which ignores it from
  // a node it does not know as its replica yet (a master demoted by the last failover
  // announces its new role with its next ping): the request would time out unseen.
  const std::string master_id = master.cmd_str({"CLUSTER", "MYID"}),
                    promoted_id = promoted->cmd_str({"CLUSTER", "MYID"});
  await(
      [&] {
        if (!replica_in_sync(*promoted)) return false;
        auto known = try_cmd(master, {"CLUSTER", "REPLICAS", master_id});
        return std::any_of(known.begin(), known.end(), [&](const std::string& line) {
          return line.rfind(promoted_id + " ", 0) == 0;
        });
      },
      left_until(until), "the master does not know its replica");
  promoted->cmd({"CLUSTER", "FAILOVER"});
  await([&] { return role_of(*promoted) == "master" && role_of(master) == "slave"; },
        left_until(until), "the replica did not take over");
  promoted_at_[promoted->port()] = Clock::now();
  await_converged(left_until(until));
  if (role_of(*promoted) != "master")
    throw std::runtime_error("deployment: the promoted replica did not stay master");
  return *promoted;
}

void ClusterSetup::await_converged(std::chrono::milliseconds timeout) {
  await(
      [&] {
        std::optional<std::vector<int>> agreed;
        for (const RedisServer& n : nodes_) {
          if (n.pid() < 0) continue;
          auto info = try_cmd(n, {"CLUSTER", "INFO"});
          if (info.empty() || info_fields(info[0])["cluster_state"] != "ok") return false;
          auto owners = slot_owners(n);
          if (std::count(owners.begin(), owners.end(), 0) != 0) return false;
          if (agreed && owners != *agreed) return false;
          agreed = std::move(owners);
        }
        return true;
      },
      timeout, "the cluster did not converge (cluster_state:ok, one owner per slot everywhere)");
}

}  // namespace rlock::test
