#include <cstdio>
#include <exception>

#include "cli/app.hpp"
#include "util/error.hpp"

// The one place where errors become a stderr line and an exit code.
int main(int argc, char** argv) {
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
