#pragma once

namespace rlock::redis {

// Whether a request may be sent again after the connection failed under it.
enum class Retry {
  kNever,       // not idempotent: an error is final
  kIdempotent,  // safe to repeat (it carries a request id, see `once` in common.lua):
                // resent on a fresh connection after an I/O error or a timeout, within
                // the request's budget
};

// Attempts of one idempotent request at most (a flow that drops every request must not
// make rlock spin through its budget).
inline constexpr int kMaxTries = 3;

}  // namespace rlock::redis
