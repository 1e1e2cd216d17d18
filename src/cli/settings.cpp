#include "cli/settings.hpp"

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "redis/url.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

constexpr const char* kDefaultUrl = "redis://127.0.0.1:6379";
constexpr const char* kConfigKeys[] = {"url", "password_file", "prefix", "owner", "connect_timeout", "timeout"};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
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
  std::ifstream in(*path);
  if (!in) throw UsageError("cannot read config file " + *path);
  nlohmann::json cfg = nlohmann::json::parse(in, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) {
    throw UsageError("config file " + *path + " is not a JSON object");
  }
  for (const auto& [key, value] : cfg.items()) {
    bool known = false;
    for (const char* k : kConfigKeys) known = known || key == k;
    if (!known) throw UsageError("config file " + *path + ": unknown key '" + key + "'");
    if (!value.is_string()) throw UsageError("config file " + *path + ": '" + key + "' must be a string");
  }
  return cfg;
}

std::optional<std::string> config_value(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  return it->get<std::string>();
}

std::string first_of(std::initializer_list<std::optional<std::string>> candidates, std::string fallback) {
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
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw UsageError("password file " + path + " does not exist");
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw UsageError("password file " + path + " is accessible by group or others (mode " + mode +
                     "); run: chmod 600 " + path);
  }
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) throw UsageError("cannot read password file " + path);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.empty()) throw UsageError("password file " + path + " is empty");
  return line;
}

}  // namespace

void add_global_flags(CLI::App& app, GlobalFlags& f) {
  app.add_option("--url", f.url, "redis://[user:pass@]host[:port][/db] or unix:///path[?db=N]")
      ->type_name("URL");
  app.add_option("--password-file", f.password_file, "read the password from FILE (mode 600)")
      ->type_name("FILE");
  app.add_option("--prefix", f.prefix, "key prefix (default rlock:)")->type_name("PREFIX");
  app.add_option("--connect-timeout", f.connect_timeout, "connect timeout (default 2s)")->type_name("DUR");
  app.add_option("--timeout", f.timeout, "timeout of each command (default 5s)")->type_name("DUR");
  app.add_option("--format", f.format, "output of listings: json or table")
      ->check(CLI::IsMember({"json", "table"}))
      ->type_name("FMT");
  app.add_flag("-v,--verbose", f.verbose, "explain on stderr what rlock waits for and why");
  app.add_flag("-q,--quiet", f.quiet, "no result on stdout, no notices on stderr");
}

Settings resolve_settings(const GlobalFlags& f) {
  nlohmann::json cfg = load_config();
  Settings s;
  s.verbose = f.verbose;
  s.quiet = f.quiet;
  s.table = f.format == "table";
  std::string url = first_of({non_empty(f.url), env("RLOCK_URL"), env("REDIS_URL"), config_value(cfg, "url")},
                             kDefaultUrl);
  s.connect.endpoint = redis::parse_url(url);
  if (!f.password_file.empty()) {
    s.connect.endpoint.password = read_password_file(f.password_file);
  } else if (s.connect.endpoint.password.empty()) {
    if (auto pw = env("RLOCK_PASSWORD")) {
      s.connect.endpoint.password = *pw;
    } else if (auto file = config_value(cfg, "password_file")) {
      s.connect.endpoint.password = read_password_file(*file);
    }
  }
  s.prefix = first_of({non_empty(f.prefix), env("RLOCK_PREFIX"), config_value(cfg, "prefix")}, "rlock:");
  auto connect_timeout = first_of({non_empty(f.connect_timeout), config_value(cfg, "connect_timeout")}, "2s");
  auto timeout = first_of({non_empty(f.timeout), config_value(cfg, "timeout")}, "5s");
  s.connect.connect_timeout = parse_duration(connect_timeout, "--connect-timeout");
  s.connect.command_timeout = parse_duration(timeout, "--timeout");
  if (s.connect.connect_timeout.count() == 0 || s.connect.command_timeout.count() == 0) {
    throw UsageError("--connect-timeout and --timeout must be greater than 0");
  }
  if (auto o = env("RLOCK_OWNER")) {
    s.owner = o;
  } else {
    s.owner = config_value(cfg, "owner");
  }
  return s;
}

}  // namespace rlock::cli
