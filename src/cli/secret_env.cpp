#include "cli/secret_env.hpp"

#include <algorithm>
#include <string_view>

#include "redis/url.hpp"
#include "util/error.hpp"

extern char** environ;

namespace rlock::cli {
namespace {

bool url_has_secret(std::string_view url) {
  try {
    return !redis::parse_url(url).password.empty();
  } catch (const Error&) {
    return url.find('@') != std::string_view::npos;  // unreadable: assume the worst
  }
}

bool is_secret(std::string_view entry) {
  size_t eq = entry.find('=');
  if (eq == std::string_view::npos) return false;
  std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
  if (name == "RLOCK_PASSWORD") return true;
  return (name == "RLOCK_URL" || name == "REDIS_URL") && url_has_secret(value);
}

}  // namespace

std::vector<std::string> secret_variable_names(const std::vector<std::string>& environment) {
  std::vector<std::string> names;
  for (const auto& entry : environment) {
    if (is_secret(entry)) names.push_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

std::vector<std::string> without_secrets(const std::vector<std::string>& environment) {
  std::vector<std::string> out;
  std::copy_if(environment.begin(), environment.end(), std::back_inserter(out),
               [](const std::string& entry) { return !is_secret(entry); });
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace rlock::cli
