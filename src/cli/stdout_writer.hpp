#pragma once

#include <cstddef>
#include <string>

namespace rlock::cli {

// Writes `text` to fd 1 with write(2), so that every failure is seen (stdio keeps some in
// its buffer and reports none). SIGPIPE is held back meanwhile: a reader that went away is
// a failed write (EPIPE) like a full disk, not a death with the work done and unreported.
// Returns the bytes written; `*error` is the errno of the failure, 0 when everything went
// out. Every result rlock prints goes through here (Console, delay-pop's items, help).
size_t write_stdout(const std::string& text, int* error);

// What a failed write says: "writing to stdout: <strerror>".
std::string stdout_failure(int error);

}  // namespace rlock::cli
