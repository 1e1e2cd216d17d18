#pragma once

#include <stdexcept>
#include <string>

namespace rlock {

// Exit codes of the command line (documented in rlock(1)).
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;        // bad flag, duration, name
inline constexpr int kExitData = 65;         // key of another type, malformed state
inline constexpr int kExitUnavailable = 69;  // connect/auth refused, timeout
inline constexpr int kExitNotNow = 75;       // busy, wait ran out, not the holder
inline constexpr int kExitLockLost = 76;     // exec: the lock was lost while the child ran
inline constexpr int kExitNoPerm = 77;       // the server's ACL refused a command, key or channel
inline constexpr int kExitSuperseded = 79;   // a newer --supersede request replaced this one
inline constexpr int kExitInternal = 70;     // a bug in rlock
inline constexpr int kExitIoError = 74;      // a write to stdout failed (EX_IOERR)

// An error the user can act on. Thrown where the problem is known, translated into
// one stderr line and an exit code once, in main.
class Error : public std::runtime_error {
 public:
  Error(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

struct UsageError : Error {
  explicit UsageError(const std::string& m) : Error(kExitUsage, m) {}
};
struct DataError : Error {
  explicit DataError(const std::string& m) : Error(kExitData, m) {}
};
struct UnavailableError : Error {
  explicit UnavailableError(const std::string& m) : Error(kExitUnavailable, m) {}
};

}  // namespace rlock
