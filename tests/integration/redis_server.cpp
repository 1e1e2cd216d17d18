// RedisServer, and the harness's own Redis client (hiredis) through which it and the tests'
// checks talk to the server.
#include "redis_server.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <sstream>
#include <thread>

#include "harness_internal.hpp"
#include "ports.hpp"
#include "processes.hpp"
#include "test_certificates.hpp"
#include "test_files.hpp"

namespace rlock::test {

using detail::pidfd_open;
using detail::poll_readable;
using detail::spawn_process;
using detail::throw_errno;

namespace {

// --- the harness's own Redis client ------------------------------------------------------

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

ReplyPtr send(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data());
  if (raw == nullptr) throw RedisError(std::string("redis I/O error: ") + c->errstr);
  ReplyPtr reply(static_cast<redisReply*>(raw));
  if (reply->type == REDIS_REPLY_ERROR) throw RedisError(std::string(reply->str, reply->len));
  return reply;
}

// Connects to 127.0.0.1:port, authenticates with `password` (if any) and selects `db`.
ContextPtr connect_admin(int port, const std::string& password, int db,
                         std::chrono::milliseconds timeout) {
  ContextPtr c(redisConnectWithTimeout("127.0.0.1", port, to_timeval(timeout)));
  if (!c) throw RedisError("redis: out of memory");
  if (c->err) throw RedisError(std::string("redis connect: ") + c->errstr);
  redisSetTimeout(c.get(), to_timeval(10s));
  if (!password.empty()) send(c.get(), {"AUTH", password});
  if (db != 0) send(c.get(), {"SELECT", std::to_string(db)});
  return c;
}

void flatten(const redisReply* r, std::vector<std::string>& out) {
  switch (r->type) {
    case REDIS_REPLY_ARRAY:
      for (size_t i = 0; i < r->elements; ++i) flatten(r->element[i], out);
      break;
    case REDIS_REPLY_INTEGER:
      out.push_back(std::to_string(r->integer));
      break;
    case REDIS_REPLY_NIL:
      out.emplace_back();
      break;
    default:
      out.emplace_back(r->str, r->len);
  }
}

}  // namespace

int free_cluster_port();  // deployments.cpp

struct RedisServer::State {
  RedisOptions options;
  TempDir dir;
  int port = 0;
  int tls_port = 0;
  pid_t pid = -1;
  Fd pidfd;
  std::unique_ptr<RedisServer> sentinel;  // RLOCK_TEST_TOPOLOGY=sentinel
  // RLOCK_TEST_TOPOLOGY=quorum: the other two members (this server is the first).
  std::vector<std::unique_ptr<RedisServer>> quorum;

  std::string config_path() const { return dir / "redis.conf"; }
  std::string log_path() const { return dir / "redis.log"; }
  std::string sock_path() const { return options.unix_socket ? dir / "redis.sock" : ""; }

  void write_config() const {
    std::ostringstream conf;
    // No 5 s wait before a replica's first sync (Redis 7's diskless default): every setup
    // with a replica would pay it.
    conf << "port " << port << "\nbind 127.0.0.1\nsave \"\"\nappendonly no\n"
         << "repl-diskless-sync-delay 0\n"
         << "daemonize no\nlogfile \"\"\ndir " << dir.path().string() << "\n";
    if (options.unix_socket) conf << "unixsocket " << sock_path() << "\nunixsocketperm 700\n";
    if (!options.requirepass.empty()) conf << "requirepass " << options.requirepass << "\n";
    if (options.tls) {
      conf << "tls-port " << tls_port << "\ntls-cert-file " << options.tls->cert
           << "\ntls-key-file " << options.tls->key << "\ntls-ca-cert-file "
           << test_certificates().ca << "\ntls-auth-clients "
           << (options.tls->auth_clients ? "yes" : "no") << "\n";
    }
    if (as_cluster()) {
      conf << "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\n";
    }
    for (const auto& line : options.config) conf << line << "\n";
    write_file(config_path(), conf.str(), 0600);
  }

  // Starts redis-server and waits until it answers PING; false if it exited (port taken).
  bool start_once() {
    spawn();
    return await_ping();
  }

  // Starts redis-server without waiting for it.
  void spawn() {
    write_config();
    Fd log(::open(log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (!log) throw_errno("open " + log_path());
    std::vector<std::string> argv{"redis-server", config_path()};
    argv.insert(argv.end(), options.args.begin(), options.args.end());
    pid = spawn_process(argv, child_env({}), log.get(), log.get());
    pidfd = Fd(pidfd_open(pid));
    if (!pidfd) throw_errno("pidfd_open");
  }

  // Waits until the server spawn() started answers PING; false if it exited (port taken).
  bool await_ping() {
    // Start-up wait, not a test assertion: connect until it answers, at most 10s.
    const auto until = deadline(10s);
    while (Clock::now() < until) {
      try {
        auto c = connect_admin(port, options.requirepass, 0, 200ms);
        auto reply = send(c.get(), {"PING"});
        if (reply->type == REDIS_REPLY_STATUS && std::string(reply->str) == "PONG") return true;
      } catch (const RedisError&) {
        // not listening yet
      }
      if (poll_readable(pidfd.get(), deadline(20ms))) {  // it exited
        ::waitpid(pid, nullptr, 0);
        pid = -1;
        pidfd.reset();
        return false;
      }
    }
    stop();
    throw std::runtime_error("redis-server did not answer PING within 10s; log:\n" +
                             read_file(log_path()));
  }

  bool as_cluster() const { return options.test_topology && test_topology() == "cluster"; }

  // RLOCK_TEST_TOPOLOGY=cluster: all slots to this one node, and wait until it serves them.
  void become_cluster() {
    auto c = connect_admin(port, options.requirepass, 0, 2s);
    auto state = send(c.get(), {"CLUSTER", "INFO"});
    if (std::string(state->str, state->len).find("cluster_state:ok") != std::string::npos) return;
    add_slots(c.get());
    const auto until = deadline(10s);
    while (Clock::now() < until) {
      auto info = send(c.get(), {"CLUSTER", "INFO"});
      if (std::string(info->str, info->len).find("cluster_state:ok") != std::string::npos) return;
      std::this_thread::sleep_for(10ms);  // start-up wait: the cluster cron has no event
    }
    throw std::runtime_error("one-node cluster did not reach cluster_state:ok in 10s");
  }

  static void add_slots(redisContext* c) {
    try {
      send(c, {"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
    } catch (const RedisError&) {
      // "Slot 0 is already busy": a restart, whose nodes.conf kept the slots, or a spare
      // given them while it waited.
    }
  }

  // A spare's slots, given once it listens: its cluster_state turns ok about 1 s after
  // ADDSLOTSRANGE, which it then spends waiting instead of the test that takes it.
  bool slots_given = false;
  void give_slots_if_up() {
    if (slots_given) return;
    try {
      auto c = connect_admin(port, options.requirepass, 0, 50ms);
      // Only to this spare: had its port been taken meanwhile, another test's server
      // (of a run beside this one) would answer there.
      std::vector<std::string> got;
      flatten(send(c.get(), {"CONFIG", "GET", "dir"}).get(), got);
      if (got.size() != 2 || got[1] != std::filesystem::canonical(dir.path()).string()) return;
      add_slots(c.get());
      slots_given = true;
    } catch (const RedisError&) {
      // not listening yet: the next take tries again
    }
  }

  // Whether this server is a one-node test cluster of default options, the kind that
  // take_spare() hands out.
  bool plain_cluster() const {
    return as_cluster() && options.requirepass.empty() && !options.unix_socket &&
           options.config.empty() && options.args.empty() && !options.pick_port;
  }

  // A one-node cluster refuses commands for its first 2s (Redis's CLUSTER_WRITABLE_DELAY,
  // counted from its start), longer than most tests take. So under
  // RLOCK_TEST_TOPOLOGY=cluster, the servers of default options that tests get were started
  // while earlier tests ran: kSpares of them wait, each given its slots at a take once it
  // listens, and each take hands out the oldest and starts one more. (With one spare, given
  // its slots when taken, every test waited about 1 s: 200 s of the cluster run's 470 s.)
  // Those left are stopped when the test binary exits.
  static constexpr std::size_t kSpares = 16;
  struct Spares {
    std::deque<std::unique_ptr<State>> states;  // oldest first
    ~Spares() {
      for (auto& state : states) state->stop();
    }
  };
  static Spares& spares() {
    static Spares s;
    return s;
  }

  // Takes the oldest spare server into this State if it is up, and starts spares until
  // kSpares wait; false if there was none, or it did not come up.
  bool take_spare() {
    auto& waiting = spares().states;
    bool taken = false;
    for (auto& state : waiting) state->give_slots_if_up();
    if (!waiting.empty()) {
      std::unique_ptr<State> oldest = std::move(waiting.front());
      waiting.pop_front();
      if (oldest->await_ping()) {
        port = oldest->port;
        pid = std::exchange(oldest->pid, -1);
        pidfd = std::move(oldest->pidfd);
        dir = std::move(oldest->dir);
        taken = true;
      }
    }
    while (waiting.size() < kSpares) {
      auto next = std::make_unique<State>();
      next->options = options;
      next->port = free_cluster_port();
      next->spawn();
      waiting.push_back(std::move(next));
    }
    return taken;
  }

  void start(bool keep_port) {
    if (!keep_port && plain_cluster() && take_spare()) {
      become_cluster();
      return;
    }
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (!keep_port || port == 0) {
        port = options.pick_port ? options.pick_port()
               : as_cluster()    ? free_cluster_port()
                                 : free_port();
        if (options.tls) tls_port = free_port();
      }
      if (start_once()) {
        if (as_cluster()) become_cluster();
        return;
      }
    }
    throw std::runtime_error("redis-server failed to start; log:\n" + read_file(log_path()));
  }

  void stop() {
    if (pid < 0) return;
    ::kill(pid, SIGCONT);  // in case a test froze it
    ::kill(pid, SIGTERM);
    if (!poll_readable(pidfd.get(), deadline(5s))) ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
    pidfd.reset();
  }
};

RedisServer::RedisServer(RedisOptions options) : s_(std::make_unique<State>()) {
  s_->options = std::move(options);
  s_->start(false);
  if (s_->options.test_topology && test_topology() == "sentinel") {
    std::vector<std::string> config = {
        "sentinel monitor m 127.0.0.1 " + std::to_string(s_->port) + " 1",
        "sentinel down-after-milliseconds m 60000"};
    if (!s_->options.requirepass.empty())
      config.push_back("sentinel auth-pass m " + s_->options.requirepass);
    s_->sentinel = std::make_unique<RedisServer>(
        RedisOptions{.config = config, .args = {"--sentinel"}, .test_topology = false});
  }
  if (s_->options.test_topology && test_topology() == "quorum") {
    RedisOptions member = s_->options;
    member.test_topology = false;
    member.pick_port = {};
    for (int i = 0; i < 2; ++i) s_->quorum.push_back(std::make_unique<RedisServer>(member));
  }
}

std::string test_topology() {
  const char* t = std::getenv("RLOCK_TEST_TOPOLOGY");
  return t && *t ? t : "standalone";
}

std::string RedisServer::topology_url() const {
  if (!s_->options.test_topology) return url();
  if (s_->sentinel)
    return "redis-sentinel://127.0.0.1:" + std::to_string(s_->sentinel->port()) + "/m";
  if (s_->as_cluster()) return "redis-cluster://127.0.0.1:" + std::to_string(s_->port);
  if (!s_->quorum.empty()) {
    std::string out = "redis-quorum://" +
                      (s_->options.requirepass.empty() ? "" : ":" + s_->options.requirepass + "@") +
                      "127.0.0.1:" + std::to_string(s_->port);
    for (const auto& m : s_->quorum) out += ",127.0.0.1:" + std::to_string(m->port());
    return out;
  }
  return url();
}

std::vector<const RedisServer*> RedisServer::members() const {
  std::vector<const RedisServer*> out = {this};
  for (const auto& m : s_->quorum) out.push_back(m.get());
  return out;
}

namespace {
long long integer_reply(const std::string& s) {
  size_t used = 0;
  long long v = std::stoll(s, &used);
  if (used != s.size()) throw RedisError("not an integer reply: " + s);
  return v;
}
}  // namespace

long long RedisServer::on_majority(const std::vector<std::string>& argv) const {
  std::vector<long long> values;
  for (const RedisServer* m : members()) {
    // A member that missed a write answers nil where the others answer a number (HGET).
    const std::string reply = m->cmd_str(argv);
    values.push_back(reply.empty() ? 0 : integer_reply(reply));
  }
  std::sort(values.rbegin(), values.rend());
  return values[values.size() / 2];
}

RedisServer::~RedisServer() {
  if (s_) s_->stop();
}

RedisServer::RedisServer(RedisServer&&) noexcept = default;

RedisServer& RedisServer::operator=(RedisServer&& other) noexcept {
  if (this != &other) {
    if (s_) s_->stop();
    s_ = std::move(other.s_);
  }
  return *this;
}

int RedisServer::port() const { return s_->port; }
std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(s_->port); }
std::string RedisServer::socket_path() const { return s_->sock_path(); }
int RedisServer::tls_port() const { return s_->tls_port; }
std::string RedisServer::tls_url() const {
  return "rediss://127.0.0.1:" + std::to_string(s_->tls_port);
}
pid_t RedisServer::pid() const { return s_->pid; }
std::string RedisServer::log() const { return read_file(s_->log_path()); }

std::vector<std::string> RedisServer::cmd(const std::vector<std::string>& argv, int db) const {
  // On a quorum, what a test does to "the server" (a forged hold, CLIENT PAUSE, SCRIPT
  // FLUSH) it does to every member, each answering on its own; the first member answers.
  for (const auto& m : s_->quorum) {
    try {
      m->cmd(argv, db);
    } catch (const RedisError&) {
      // the first member's reply (or error) is the one the test sees
    }
  }
  auto c = connect_admin(s_->port, s_->options.requirepass, db, 2s);
  auto reply = send(c.get(), argv);
  std::vector<std::string> out;
  flatten(reply.get(), out);
  return out;
}

std::string RedisServer::cmd_str(const std::vector<std::string>& argv, int db) const {
  auto out = cmd(argv, db);
  if (out.size() != 1) throw RedisError("expected one reply element");
  return out[0];
}

long long RedisServer::cmd_int(const std::vector<std::string>& argv, int db) const {
  return integer_reply(cmd_str(argv, db));
}

// On a quorum (RLOCK_TEST_TOPOLOGY=quorum) these act on every member: the deployment, as a
// test of one server means it, restarts, stops or stalls.
void RedisServer::restart() {
  s_->stop();
  for (auto& m : s_->quorum) m->s_->stop();
  s_->start(true);
  for (auto& m : s_->quorum) m->s_->start(true);
}

void RedisServer::stop() {
  s_->stop();
  for (auto& m : s_->quorum) m->s_->stop();
}

void RedisServer::freeze() {
  if (s_->pid > 0) ::kill(s_->pid, SIGSTOP);
  for (auto& m : s_->quorum) m->freeze();
}

void RedisServer::thaw() {
  if (s_->pid > 0) ::kill(s_->pid, SIGCONT);
  for (auto& m : s_->quorum) m->thaw();
}

}  // namespace rlock::test
