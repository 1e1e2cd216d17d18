#include "cli/secret_env.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using rlock::cli::secret_variable_names;
using rlock::cli::without_secrets;

TEST_CASE("a job's environment loses Redis passwords and keeps everything else") {
  const std::vector<std::string> env = {
      "PATH=/bin",
      "RLOCK_PASSWORD=S3cret",
      "RLOCK_URL=redis://:S3cret@h:6379",
      "REDIS_URL=redis://u:S3cret@h",
      "RLOCK_PREFIX=x:",
      "RLOCK_OWNER=me",
      "RLOCK_PASSWORDS=not-ours",
  };
  CHECK(secret_variable_names(env) ==
        std::vector<std::string>{"RLOCK_PASSWORD", "RLOCK_URL", "REDIS_URL"});
  CHECK(without_secrets(env) == std::vector<std::string>{"PATH=/bin",
                                                         "RLOCK_PREFIX=x:", "RLOCK_OWNER=me",
                                                         "RLOCK_PASSWORDS=not-ours"});
}

TEST_CASE("URLs without a password stay; unreadable ones with an '@' go") {
  CHECK(secret_variable_names({"RLOCK_URL=redis://h:1/2", "REDIS_URL=unix:///s.sock"}).empty());
  CHECK(secret_variable_names({"RLOCK_URL=redis://alice@h"}).empty());  // a user, no password
  CHECK(secret_variable_names({"RLOCK_URL=redis://:S3cret@h:99999"}) ==
        std::vector<std::string>{"RLOCK_URL"});
  CHECK(secret_variable_names({"REDIS_URL=http://u:S3cret@h"}) ==
        std::vector<std::string>{"REDIS_URL"});
}
