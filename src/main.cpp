#include <cstdio>
#include <exception>

#include <cstring>

#include "cli/app.hpp"
#include "exec/guardian.hpp"
#include "util/error.hpp"

// The one place where errors become a stderr line and an exit code.
int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], rlock::exec::kGuardianFlag) == 0) {
    return rlock::exec::guardian_main(argc, argv);
  }
  try {
    return rlock::cli::run(argc, argv);
  } catch (const rlock::Error& e) {
    std::fprintf(stderr, "rlock: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlock: internal error: %s\n", e.what());
    return 70;
  }
}
