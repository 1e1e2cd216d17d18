#include "util/spool.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace rlock {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw Error(kExitIoError, "temporary file: " + what + ": " + std::strerror(errno));
}

std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

// O_TMPFILE where the file system has it (nothing left behind even on SIGKILL), else a
// named file unlinked at once.
int open_unnamed() {
  const std::string dir = temp_dir();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string path = dir + "/rlock-spool.XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) fail("create in " + dir);
  ::unlink(path.c_str());
  return fd;
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

Spool::Spool(Spool&& other) noexcept
    : bound_(other.bound_), buffer_(std::move(other.buffer_)), fd_(other.fd_) {
  other.fd_ = -1;
}

Spool::~Spool() {
  if (fd_ >= 0) ::close(fd_);
}

void Spool::append(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() > bound_) flush_to_file();
}

void Spool::flush_to_file() {
  if (fd_ < 0) fd_ = open_unnamed();
  write_all(fd_, buffer_);
  buffer_.clear();
}

void Spool::drain(const std::function<void(const std::string&)>& out) {
  if (fd_ >= 0) {
    if (::lseek(fd_, 0, SEEK_SET) < 0) fail("seek");
    std::string chunk(std::max<size_t>(bound_, 4096), '\0');
    while (true) {
      ssize_t n = ::read(fd_, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("read");
      if (n == 0) break;
      out(chunk.substr(0, static_cast<size_t>(n)));
    }
  }
  if (!buffer_.empty()) out(buffer_);
}

}  // namespace rlock
