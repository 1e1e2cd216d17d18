// A redis-server of the test's own (RedisServer, RedisOptions) and the topology switch
// (RLOCK_TEST_TOPOLOGY) that makes it a cluster, a Sentinel master or a quorum.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlock::test {

// An error reply (or I/O failure) of the harness's own Redis client.
struct RedisError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A TLS listener beside the plain port (which the harness's own client keeps using, so
// that checks never go through rlock's TLS code): certificate and key files, normally from
// test_certificates().
struct TlsListener {
  std::string cert;
  std::string key;
  bool auth_clients = false;  // tls-auth-clients yes: a client certificate is demanded
};

struct RedisOptions {
  // Password of the default user ("requirepass"); empty: none.
  std::string requirepass{};
  // Also listen on <tempdir>/redis.sock with unixsocketperm 700.
  bool unix_socket = false;
  // Extra redis.conf lines, e.g. `user alice on >pw ~* &* +@all` or `rename-command KEYS ""`.
  std::vector<std::string> config{};
  // Extra command-line arguments after the config file, e.g. `--sentinel`.
  std::vector<std::string> args{};
  // Picks the port (a cluster node needs port + 10000 free too); default: free_port().
  std::function<int()> pick_port{};
  // Whether RLOCK_TEST_TOPOLOGY applies (see test_topology()); false for the nodes that the
  // deployments (deployments.hpp) configure themselves.
  bool test_topology = true;
  // Also listen for TLS on tls_port() (the CA of test_certificates() verifies clients).
  std::optional<TlsListener> tls{};
};

// RLOCK_TEST_TOPOLOGY, the one switch that runs the suite's tests on another topology:
// "standalone" (default), "cluster" (every server is a one-node cluster serving all 16384
// slots, named by a redis-cluster:// URL: cluster-mode scripts, sharded pub/sub, the
// cluster router) or "sentinel" (every server is a master watched by a sentinel of its own,
// named by a redis-sentinel:// URL) or "quorum" (every server is the first of three
// independent masters named by a redis-quorum:// URL; restart, stop, freeze, thaw and cmd
// act on all three, cmd answers with the first's reply). Checks that talk to the server
// directly still work.
std::string test_topology();

// A redis-server of its own on a free 127.0.0.1 port, with no persistence, in a temporary
// directory. Started by the constructor (which waits until it answers PING, at most 10s),
// stopped by PID (TERM, then KILL) and its directory removed by the destructor. Move-only.
class RedisServer {
 public:
  explicit RedisServer(RedisOptions options = {});
  ~RedisServer();
  RedisServer(RedisServer&&) noexcept;
  RedisServer& operator=(RedisServer&&) noexcept;

  int port() const;
  // redis://127.0.0.1:PORT (no password, even with requirepass).
  std::string url() const;
  // The URL rlock is given (rlock_argv): url(), or per RLOCK_TEST_TOPOLOGY the
  // redis-cluster:// or redis-sentinel:// URL that names this server.
  std::string topology_url() const;
  // The TLS port (0 without options.tls) and rediss://127.0.0.1:TLS_PORT.
  int tls_port() const;
  std::string tls_url() const;
  // Path of the unix socket; empty unless options.unix_socket.
  std::string socket_path() const;
  pid_t pid() const;
  // The server's log so far (for failure messages).
  std::string log() const;

  // Runs one command on a fresh connection (AUTH with requirepass, SELECT db) and returns
  // the reply flattened to strings: an array gives its elements (nested arrays are
  // flattened, nil becomes ""), any other reply one element. Throws RedisError on an error
  // reply or I/O failure.
  std::vector<std::string> cmd(const std::vector<std::string>& argv, int db = 0) const;
  // The single (scalar) reply of cmd() as a string; nil gives "".
  std::string cmd_str(const std::vector<std::string>& argv, int db = 0) const;
  // The reply of cmd() as an integer (integer replies, or strings holding one).
  long long cmd_int(const std::vector<std::string>& argv, int db = 0) const;

  // Every server of the deployment topology_url() names that holds data: this one and, on
  // a quorum, the other members (for checks that each member must pass on its own).
  std::vector<const RedisServer*> members() const;
  // The integer reply of `argv` that a majority of members() give at least (on one
  // server: its own; nil counts as 0). A quorum member that missed a hold, its grant answered after
  // the majority's, sees the lock free, and the next waiter takes it there (a minority) instead of
  // queueing.
  long long on_majority(const std::vector<std::string>& argv) const;

  // Stops the server and starts a new one on the same port with the same config. Nothing
  // is persisted, so all data is lost.
  void restart();
  // Stops the server (TERM, then KILL); connections are refused until restart().
  void stop();
  // SIGSTOP / SIGCONT: a frozen server accepts connections but answers nothing.
  void freeze();
  void thaw();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace rlock::test
