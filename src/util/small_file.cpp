#include "util/small_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace rlock {
namespace {

// Closes the descriptor it owns. Move-only.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return nullptr;
}

}  // namespace

SmallFile read_small_file(const std::string& path, size_t max_bytes, std::string_view what) {
  std::string prefix = std::string(what) + " " + path;
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) throw UsageError(prefix + " does not exist");
    throw UsageError("cannot open " + prefix + ": " + std::strerror(errno));
  }
  SmallFile file;
  if (::fstat(fd.get(), &file.status) != 0)
    throw UsageError("cannot stat " + prefix + ": " + std::strerror(errno));
  if (!S_ISREG(file.status.st_mode)) {
    const char* kind = kind_of(file.status.st_mode);
    throw UsageError(prefix + " is " + (kind ? std::string(kind) + ", " : "") +
                     "not a regular file");
  }
  std::string limit = std::to_string(max_bytes / 1024) + " KiB";
  if (static_cast<unsigned long long>(file.status.st_size) > max_bytes) {
    throw UsageError(prefix + " is larger than " + limit);
  }
  // Read one byte more than allowed: a file that grew since fstat is caught too.
  file.contents.resize(max_bytes + 1);
  size_t got = 0;
  while (got < file.contents.size()) {
    ssize_t n = ::read(fd.get(), file.contents.data() + got, file.contents.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError("cannot read " + prefix + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) throw UsageError(prefix + " is larger than " + limit);
  file.contents.resize(got);
  return file;
}

}  // namespace rlock
