#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/lock_options.hpp"
#include "cli/once_per.hpp"
#include "cli/settings.hpp"
#include "cli/supervised.hpp"

namespace rlock::cli {

// What `exec` (and `elect`, an exec that waits forever) is given.
struct ExecFlags {
  LockFlags lock;
  SuperviseFlags supervise;
  std::optional<std::string> shell_command;  // -c CMD, as flock -c
  OncePerFlags once_per;                     // exec only: elect has none
};

// Waits for the locks as the flags say and runs `command` under them (see `rlock help
// exec`); returns rlock's exit code.
int run_exec(const ExecFlags& flags, std::vector<std::string> command, const Settings& settings);

}  // namespace rlock::cli
