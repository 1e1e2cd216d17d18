#include <exception>
#include <string>

#include "cli/app.hpp"
#include "exec/signals.hpp"
#include "util/error.hpp"
#include "util/one_line.hpp"

// The one place where errors become a stderr line and an exit code.
int main(int argc, char** argv) {
  rlock::exec::ignore_sigpipe();
  try {
    return rlock::cli::run(argc, argv);
  } catch (const rlock::Error& e) {
    rlock::print_diagnostic(e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    rlock::print_diagnostic(std::string("internal error: ") + e.what());
    return 70;
  }
}
