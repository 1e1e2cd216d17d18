#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace rlock {

// What read_small_file read: the contents and the file's status (mode, owner).
struct SmallFile {
  std::string contents;
  struct stat status {};
};

// Reads a whole regular file of at most `max_bytes` without ever blocking on it: opens
// with O_NONBLOCK (a FIFO cannot hang), refuses anything that is not a regular file
// (FIFO, directory, device, socket) and anything larger. Throws UsageError that starts
// with `what` and the path ("config file /x is a directory, not a regular file").
SmallFile read_small_file(const std::string& path, size_t max_bytes, std::string_view what);

}  // namespace rlock
