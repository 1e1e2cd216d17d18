#pragma once

namespace rlock::cli {

// Parses the command line and runs the chosen subcommand. Returns the exit code; throws
// rlock::Error for everything main turns into one stderr line.
int run(int argc, char** argv);

}  // namespace rlock::cli
