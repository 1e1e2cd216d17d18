#pragma once

#include <string>

#include "util/error.hpp"

namespace rlock::redis {

// The connection failed while sending or receiving (reset, closed, unreachable).
// The connection is dead afterwards: reconnect, don't reuse.
struct IoError : UnavailableError {
  using UnavailableError::UnavailableError;
};

// A command or connect attempt ran past its timeout (the socket had nothing to read or no
// room to write until the deadline: EAGAIN waited for with poll()).
struct TimeoutError : IoError {
  using IoError::IoError;
};

// The server answered with an error reply. `code()` is its first word (WRONGTYPE, NOSCRIPT,
// NOAUTH, ...). Exit code: 65 for data errors, 69 where the server refuses to serve.
class ReplyError : public Error {
 public:
  explicit ReplyError(const std::string& message);
  const std::string& code() const { return code_; }
  const std::string& reply() const { return reply_; }

 private:
  std::string code_;
  std::string reply_;
};

// A write that takes or renews something was not acknowledged by --sync-replicas replicas
// (or the master has fewer connected: then nothing was written). Exit 69: a replication
// that does not answer is Redis not being available as asked.
struct ReplicationError : UnavailableError {
  using UnavailableError::UnavailableError;
};

// A quorum's majority granted a hold that nobody can use: its answers, or its token's
// write-back, came after the lease ran out, or no majority confirmed the write-back. Not
// busy (nobody holds it): the caller gives back what was granted, and a wait with time left
// tries again.
struct UnusableGrantError : UnavailableError {
  using UnavailableError::UnavailableError;
};

}  // namespace rlock::redis
