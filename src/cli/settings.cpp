#include "cli/settings.hpp"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/flag_options.hpp"
#include "cli/whole_flag.hpp"
#include "prim/redisson_fair_lock.hpp"
#include "prim/redisson_layout.hpp"
#include "prim/redisson_rsem_layout.hpp"
#include "redis/url.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/one_line.hpp"
#include "util/small_file.hpp"

namespace rlock::cli {
namespace {

constexpr const char* kDefaultUrl = "redis://127.0.0.1:6379";
constexpr size_t kMaxConfigBytes = 64 * 1024;
constexpr size_t kMaxPasswordFileBytes = 4 * 1024;
constexpr size_t kMaxKeyFileBytes = 64 * 1024;
// The config file keys that are no flag's (the flag table names the others).
constexpr std::string_view kSentinelConfigKeys[] = {"sentinel_user", "sentinel_password"};
// More replicas than any deployment has: a larger --sync-replicas is a typo.
constexpr long long kMaxSyncReplicas = 1000;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// A file that holds a secret must be readable by its owner only.
void refuse_open_mode(const struct stat& status, const std::string& path, const char* what) {
  if (status.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
    throw UsageError(std::string(what) + " " + path + " is accessible by group or others (mode " +
                     mode + "); run: chmod 600 " + path);
  }
}

// The first config file that exists: $RLOCK_CONFIG, ~/.config/rlock/config.json,
// /etc/rlock/config.json. A named RLOCK_CONFIG that is missing is an error.
std::optional<std::string> config_path() {
  if (auto p = env("RLOCK_CONFIG")) return p;
  struct stat st;
  if (auto home = env("HOME")) {
    std::string p = *home + "/.config/rlock/config.json";
    if (stat(p.c_str(), &st) == 0) return p;
  }
  if (stat("/etc/rlock/config.json", &st) == 0) return std::string("/etc/rlock/config.json");
  return std::nullopt;
}

nlohmann::json load_config() {
  auto path = config_path();
  if (!path) return nlohmann::json::object();
  SmallFile file = read_small_file(*path, kMaxConfigBytes, "config file");
  nlohmann::json cfg = nlohmann::json::parse(file.contents, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) {
    throw UsageError("config file " + *path + " is not a JSON object");
  }
  for (const auto& [key, value] : cfg.items()) {
    bool known = false;
    for (std::string_view k : kSentinelConfigKeys) known = known || key == k;
    for (const Flag& flag : flag_table())
      known = known || (!flag.config.empty() && key == flag.config);
    if (!known) throw UsageError("config file " + *path + ": unknown key '" + key + "'");
    if (!value.is_string())
      throw UsageError("config file " + *path + ": '" + key + "' must be a string");
  }
  // The one secret a config file may hold: as strict as a password file about who reads it.
  if (cfg.contains("sentinel_password")) refuse_open_mode(file.status, *path, "config file");
  return cfg;
}

std::optional<std::string> config_value(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  return it->get<std::string>();
}

std::string first_of(std::initializer_list<std::optional<std::string>> candidates,
                     std::string fallback) {
  for (const auto& c : candidates) {
    if (c) return *c;
  }
  return fallback;
}

std::optional<std::string> non_empty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

// Reads the first line of a password file, refusing files that others can read.
std::string read_password_file(const std::string& path) {
  SmallFile file = read_small_file(path, kMaxPasswordFileBytes, "password file");
  refuse_open_mode(file.status, path, "password file");
  std::string line = file.contents.substr(0, file.contents.find('\n'));
  while (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw UsageError("password file " + path + " is empty");
  return line;
}

// The URL and where it came from (for messages: the URL itself is never quoted).
struct UrlSource {
  std::string url;
  const char* from;
};

UrlSource pick_url(const std::string& flag, const nlohmann::json& cfg) {
  if (!flag.empty()) return {flag, "--url"};
  if (auto u = env("RLOCK_URL")) return {*u, "RLOCK_URL"};
  if (auto u = env("REDIS_URL")) return {*u, "REDIS_URL"};
  if (auto u = config_value(cfg, "url")) return {*u, "the config file's url"};
  return {kDefaultUrl, "the default"};
}

redis::Target parse_url_from(const UrlSource& source) {
  try {
    return redis::parse_target(source.url);
  } catch (const Error& e) {
    throw Error(e.exit_code(), std::string(e.what()) + " in " + source.from);
  }
}

// Password precedence: --password-file, the URL, RLOCK_PASSWORD, the config file's
// password_file. A URL that names an ACL user without a password needs one of the others.
void resolve_password(const GlobalFlags& f, const nlohmann::json& cfg, redis::Endpoint& ep) {
  if (!f.password_file.empty()) {
    ep.password = read_password_file(f.password_file);
  } else if (ep.password.empty()) {
    if (auto pw = env("RLOCK_PASSWORD")) {
      ep.password = *pw;
    } else if (auto file = config_value(cfg, "password_file")) {
      ep.password = read_password_file(*file);
    }
  }
  if (!ep.user.empty() && ep.password.empty()) {
    throw UsageError(
        "the redis URL names an ACL user but no password: give it with --password-file, "
        "RLOCK_PASSWORD, the config file's password_file or redis://USER:PASSWORD@host");
  }
}

// The sentinels' own credentials: the URL's parameters, else the config file's. Never the
// master's password: a Sentinel deployment may protect the two differently.
void resolve_sentinel_credentials(const nlohmann::json& cfg, redis::Target& target) {
  if (target.kind != redis::Deployment::kSentinel) return;
  if (target.sentinel_user.empty())
    target.sentinel_user = config_value(cfg, "sentinel_user").value_or("");
  if (target.sentinel_password.empty())
    target.sentinel_password = config_value(cfg, "sentinel_password").value_or("");
  if (!target.sentinel_user.empty() && target.sentinel_password.empty()) {
    throw UsageError(
        "sentinel_user is set but no sentinel password: give it with the config file's "
        "sentinel_password or the URL's ?sentinel_password=");
  }
}

// A global option's value and where it came from: given (`value`), else its environment
// variable, else its config file key, both as the flag table names them; else nothing
// (`from` empty). Each value is named by its source: a bad one in the environment or the config
// file is no typo on the command line.
struct Sourced {
  std::string value;
  std::string from;  // for messages: "--tls-key", "RLOCK_TLS_KEY", "the config file's tls_key"
};

Sourced sourced(const std::string& value, std::string_view flag, const nlohmann::json& cfg) {
  const Flag& f = flag_of("", flag);
  if (!value.empty()) return {value, std::string(flag)};
  std::string variable(f.env), key(f.config);
  if (!variable.empty()) {
    if (auto v = env(variable.c_str())) return {*v, variable};
  }
  if (!key.empty()) {
    if (auto v = config_value(cfg, key.c_str())) return {*v, "the config file's " + key};
  }
  return {};
}

bool parse_switch(const Sourced& s) {
  if (s.value.empty() || s.value == "1" || s.value == "true" || s.value == "yes") return true;
  if (s.value == "0" || s.value == "false" || s.value == "no") return false;
  throw UsageError(s.from + ": expected 1, true, yes, 0, false or no");
}

// The TLS context of a rediss URL, made once for every connection. The private key is read
// here, under the password file's rule (mode 600 or stricter): it is a secret.
std::shared_ptr<const redis::TlsContext> resolve_tls(const GlobalFlags& f,
                                                     const nlohmann::json& cfg, bool tls_url) {
  Sourced ca_cert = sourced(f.tls_ca_cert, "--tls-ca-cert", cfg);
  Sourced ca_dir = sourced(f.tls_ca_dir, "--tls-ca-dir", cfg);
  Sourced cert = sourced(f.tls_cert, "--tls-cert", cfg);
  Sourced key = sourced(f.tls_key, "--tls-key", cfg);
  Sourced insecure = sourced(f.tls_insecure ? "1" : "", "--tls-insecure", cfg);
  if (!tls_url) {
    // The environment and a config file may serve rediss and redis URLs alike; a flag on
    // the command line is meant for this URL.
    if (!f.tls_ca_cert.empty() || !f.tls_ca_dir.empty() || !f.tls_cert.empty() ||
        !f.tls_key.empty() || f.tls_insecure) {
      throw UsageError(
          "--tls-* options apply to rediss://, rediss-sentinel://, rediss-cluster:// and "
          "rediss-quorum:// URLs only");
    }
    return nullptr;
  }
  redis::TlsConfig config;
  config.ca_file = ca_cert.value;
  config.ca_dir = ca_dir.value;
  config.cert_file = cert.value;
  config.insecure = !insecure.from.empty() && parse_switch(insecure);
  if (!key.value.empty()) {
    SmallFile file = read_small_file(key.value, kMaxKeyFileBytes, "TLS key file");
    refuse_open_mode(file.status, key.value, "TLS key file");
    config.key_pem = std::move(file.contents);
    config.key_from = key.value;
  }
  auto ctx = std::make_shared<const redis::TlsContext>(config);
  if (config.insecure) {
    print_diagnostic("warning: TLS without verification (" + insecure.from +
                     "): the server's certificate and host name are not checked, so anyone "
                     "on the path can pose as the server");
  }
  return ctx;
}

}  // namespace

void add_global_flags(CLI::App& app, GlobalFlags& f) {
  // A flag given with an empty value is refused as it is read: empty means "not given".
  auto required_value = [&app](const char* flag, std::string& target) {
    return add_table_option_function(app, flag, [flag, &target](const std::string& v) {
      if (v.empty()) throw UsageError(std::string(flag) + ": empty value");
      target = v;
    });
  };
  required_value("--url", f.url);
  required_value("--password-file", f.password_file);
  add_table_option_function(app, "--prefix", [&f](const std::string& v) { f.prefix = v; });
  required_value("--connect-timeout", f.connect_timeout);
  required_value("--timeout", f.timeout);
  required_value("--sync-replicas", f.sync_replicas);
  required_value("--sync-timeout", f.sync_timeout);
  required_value("--layout", f.layout);
  required_value("--redisson-object", f.redisson_object);
  required_value("--tls-ca-cert", f.tls_ca_cert);
  required_value("--tls-ca-dir", f.tls_ca_dir);
  required_value("--tls-cert", f.tls_cert);
  required_value("--tls-key", f.tls_key);
  add_table_flag(app, "--tls-insecure", f.tls_insecure);
  add_table_option(app, "--format", f.format)
      ->check(CLI::IsMember({"json", "table", "prometheus"}));
  add_table_flag(app, "--verbose", f.verbose);
  add_table_flag(app, "--quiet", f.quiet);
}

namespace {

RedissonObject resolve_redisson_object(const GlobalFlags& f, const nlohmann::json& cfg,
                                       Layout layout) {
  Sourced o = sourced(f.redisson_object, "--redisson-object", cfg);
  if (o.from.empty()) return RedissonObject::kDefault;
  if (layout != Layout::kRedisson) {
    throw UsageError(o.from + " names a Redisson object: it needs --layout redisson");
  }
  static const std::pair<const char*, RedissonObject> kNames[] = {
      {"lock", RedissonObject::kLock},
      {"fair-lock", RedissonObject::kFairLock},
      {"read-write-lock", RedissonObject::kReadWriteLock},
      {"semaphore", RedissonObject::kSemaphore},
      {"permit-expirable-semaphore", RedissonObject::kPermitExpirableSemaphore}};
  for (const auto& [name, object] : kNames) {
    if (o.value == name) return object;
  }
  throw UsageError(o.from + ": unknown Redisson object '" + o.value +
                   "' (lock, fair-lock, read-write-lock, semaphore or "
                   "permit-expirable-semaphore)");
}

}  // namespace

Settings resolve_settings(const GlobalFlags& f) {
  nlohmann::json cfg = load_config();
  Settings s;
  s.verbose = f.verbose;
  s.quiet = f.quiet;
  s.format = f.format == "table"        ? Format::kTable
             : f.format == "prometheus" ? Format::kPrometheus
                                        : Format::kJson;
  s.target = parse_url_from(pick_url(f.url, cfg));
  resolve_password(f, cfg, s.target.endpoint);
  resolve_sentinel_credentials(cfg, s.target);
  s.connect.endpoint = s.target.endpoint;
  s.connect.tls = resolve_tls(f, cfg, s.target.tls);
  s.prefix = first_of({f.prefix, env("RLOCK_PREFIX"), config_value(cfg, "prefix")}, "rlock:");
  auto connect_timeout =
      first_of({non_empty(f.connect_timeout), config_value(cfg, "connect_timeout")}, "2s");
  auto timeout = first_of({non_empty(f.timeout), config_value(cfg, "timeout")}, "5s");
  s.connect.connect_timeout = parse_duration(connect_timeout, "--connect-timeout");
  s.connect.command_timeout = parse_duration(timeout, "--timeout");
  if (s.connect.connect_timeout.count() == 0 || s.connect.command_timeout.count() == 0) {
    throw UsageError("--connect-timeout and --timeout must be greater than 0");
  }
  auto pick = [&](const std::string& value, std::string_view flag,
                  const char* fallback) -> std::pair<std::string, std::string> {
    Sourced s = sourced(value, flag, cfg);
    if (s.from.empty()) return {fallback, std::string(flag)};
    return {s.value, s.from};
  };
  auto [replicas, replicas_from] = pick(f.sync_replicas, "--sync-replicas", "0");
  s.connect.sync_replicas =
      static_cast<int>(parse_whole_flag(replicas, replicas_from, 0, kMaxSyncReplicas));
  auto [sync_timeout, sync_timeout_from] = pick(f.sync_timeout, "--sync-timeout", "1s");
  s.connect.sync_timeout = parse_duration(sync_timeout, sync_timeout_from);
  if (s.connect.sync_timeout.count() == 0) {
    throw UsageError(sync_timeout_from + " must be greater than 0 (WAIT 0 would wait forever)");
  }
  auto [layout, layout_from] = pick(f.layout, "--layout", "rlock");
  if (layout == "redisson") {
    s.layout = Layout::kRedisson;
  } else if (layout != "rlock") {
    throw UsageError(layout_from + ": unknown layout '" + layout + "' (rlock or redisson)");
  }
  if (s.layout == Layout::kRedisson && s.target.kind == redis::Deployment::kQuorum) {
    // A Redisson client takes the lock on one server: a majority of members means nothing
    // to it, and rlock's hold would not exclude it.
    throw UsageError(layout_from +
                     " redisson is refused on a quorum (redis-quorum://): Redisson's RLock "
                     "lives on one server and would not respect a majority");
  }
  s.redisson_object = resolve_redisson_object(f, cfg, s.layout);
  if (auto o = env("RLOCK_OWNER")) {
    s.owner = o;
  } else {
    s.owner = config_value(cfg, "owner");
  }
  return s;
}

std::unique_ptr<prim::KeyLayout> make_layout(const Settings& s) {
  // Redisson's RFairLock: every Lock of the name is the fair lock's (prim/redisson_fair_lock).
  if (s.layout == Layout::kRedisson && s.redisson_object == RedissonObject::kFairLock)
    return std::make_unique<prim::RedissonFairLayout>(s.prefix);
  // Redisson's RSemaphore: inspect --type sem lists bare counts (prim/redisson_rsem_layout).
  if (s.layout == Layout::kRedisson && s.redisson_object == RedissonObject::kSemaphore)
    return std::make_unique<prim::RedissonRSemLayout>(s.prefix);
  if (s.layout == Layout::kRedisson) return std::make_unique<prim::RedissonLayout>(s.prefix);
  return std::make_unique<prim::KeyLayout>(s.prefix);
}

void require_rlock_layout(const Settings& s, const std::string& what, const std::string& why) {
  if (s.layout == Layout::kRlock) return;
  if (!why.empty()) throw UsageError(what + " is not available under --layout redisson: " + why);
  throw UsageError(
      "--layout redisson covers Redisson's RLock, RFairLock, RReadWriteLock, "
      "RPermitExpirableSemaphore, RSemaphore, RCountDownLatch and RRateLimiter (lock, unlock, "
      "exec, sem, latch, limit, inspect); " +
      what + " is not available under it");
}

RedissonObject lock_object(const Settings& s, bool shared, const std::string& what) {
  switch (s.redisson_object) {
    case RedissonObject::kDefault:
      return shared ? RedissonObject::kReadWriteLock : RedissonObject::kLock;
    case RedissonObject::kSemaphore:
    case RedissonObject::kPermitExpirableSemaphore:
      throw UsageError("--redisson-object names a semaphore; " + what +
                       " works on locks (lock, fair-lock or read-write-lock)");
    case RedissonObject::kLock:
    case RedissonObject::kFairLock:
      if (shared) {
        throw UsageError(
            "--shared under --layout redisson is Redisson's read-write lock: use "
            "--redisson-object read-write-lock (or leave it out)");
      }
      return s.redisson_object;
    case RedissonObject::kReadWriteLock:
      return s.redisson_object;
  }
  return s.redisson_object;
}

RedissonObject sem_object(const Settings& s) {
  switch (s.redisson_object) {
    case RedissonObject::kDefault:
      return RedissonObject::kPermitExpirableSemaphore;
    case RedissonObject::kSemaphore:
    case RedissonObject::kPermitExpirableSemaphore:
      return s.redisson_object;
    default:
      throw UsageError(
          "--redisson-object names a lock; sem works on semaphore or "
          "permit-expirable-semaphore");
  }
}

redis::Topology open_topology(const Settings& s) {
  std::function<void(const std::string&)> notice;
  if (s.verbose) notice = [](const std::string& line) { std::cerr << "rlock: " << line << '\n'; };
  return redis::Topology(s.target, s.connect, std::move(notice));
}

}  // namespace rlock::cli
