#pragma once

#include <memory>
#include <optional>
#include <string>

#include "prim/key_layout.hpp"
#include "redis/connection.hpp"
#include "redis/topology.hpp"

namespace CLI {
class App;
}

namespace rlock::cli {

// Global options as given on the command line (strings: parsed once, in resolve()).
struct GlobalFlags {
  std::string url;
  std::string password_file;
  std::optional<std::string> prefix;  // given, possibly empty (keys then start with lock:)
  std::string connect_timeout;
  std::string timeout;
  std::string sync_replicas;
  std::string sync_timeout;
  std::string tls_ca_cert;
  std::string tls_ca_dir;
  std::string tls_cert;
  std::string tls_key;
  bool tls_insecure = false;
  std::string format = "json";
  std::string layout;
  std::string redisson_object;
  bool verbose = false;
  bool quiet = false;
};

// --layout: whose key layout locks use.
enum class Layout { kRlock, kRedisson };

// --redisson-object: which of Redisson's objects a name is under --layout redisson;
// kDefault lets each command choose (lock_object, sem_object).
enum class RedissonObject {
  kDefault,
  kLock,
  kFairLock,
  kReadWriteLock,
  kSemaphore,
  kPermitExpirableSemaphore
};

// --format: what a listing prints.
enum class Format { kJson, kTable, kPrometheus };

// What every subcommand runs with, after flags > environment > config file > defaults.
struct Settings {
  // The server, for a standalone one; for Sentinel and Cluster the data nodes'
  // credentials, database and timeouts (the servers are found through `target`).
  redis::ConnectOptions connect;
  // What the URL names, with every credential resolved (target.endpoint == connect.endpoint).
  redis::Target target;
  std::string prefix = "rlock:";
  Layout layout = Layout::kRlock;
  RedissonObject redisson_object = RedissonObject::kDefault;
  std::optional<std::string> owner;  // from RLOCK_OWNER or the config file
  bool verbose = false;
  bool quiet = false;
  Format format = Format::kJson;
};

// Declares the global options on the top-level app.
void add_global_flags(CLI::App& app, GlobalFlags& flags);

// The servers `s` names (standalone, Sentinel or Cluster), with -v notices on stderr.
redis::Topology open_topology(const Settings& s);

// The key layout `s` names (--layout, with --prefix).
std::unique_ptr<prim::KeyLayout> make_layout(const Settings& s);

// Throws UsageError when `what` (a subcommand) has no form in the layout `s` names: only
// locks have Redisson's layout.
void require_rlock_layout(const Settings& s, const std::string& what, const std::string& why = "");

// Why delay-push and delay-pop refuse --layout redisson.
inline constexpr const char* kRedissonDelayedQueue =
    "Redisson's RDelayedQueue keeps each element encoded by the Java client's codec (Kryo5 by "
    "default) and moves due ones only while a Java client runs its transfer task, so rlock can "
    "neither write nor take them byte for byte";

// The Redisson lock object a lock command (`what`) works on under --layout redisson:
// --redisson-object, else read-write-lock for a shared hold and lock otherwise. Throws
// UsageError for a semaphore type, and for --shared with lock or fair-lock (Redisson has
// shared holds only in its read-write lock).
RedissonObject lock_object(const Settings& s, bool shared, const std::string& what);
// The same for `sem`: permit-expirable-semaphore by default; a lock type throws.
RedissonObject sem_object(const Settings& s);

// Applies the precedence rules. Throws UsageError for bad values (naming their source).
Settings resolve_settings(const GlobalFlags& flags);

}  // namespace rlock::cli
