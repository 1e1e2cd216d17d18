#pragma once

#include <string>
#include <vector>

namespace rlock::cli {

// Names of the variables in `environment` (entries "NAME=VALUE", as in environ) that carry
// a Redis credential and that a job must not inherit: RLOCK_PASSWORD, and RLOCK_URL or
// REDIS_URL when they hold a password (or do not parse, but contain an '@').
std::vector<std::string> secret_variable_names(const std::vector<std::string>& environment);

// `environment` without the entries secret_variable_names() names.
std::vector<std::string> without_secrets(const std::vector<std::string>& environment);

// This process's environment as entries "NAME=VALUE".
std::vector<std::string> current_environment();

}  // namespace rlock::cli
