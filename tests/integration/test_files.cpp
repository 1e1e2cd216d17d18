// Fd, TempDir and the file helpers of test_files.hpp.
#include "test_files.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "harness_internal.hpp"

namespace rlock::test {

using detail::throw_errno;

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

TempDir::TempDir() {
  std::string tmpl = "/tmp/rlock-it-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw_errno("mkdtemp");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    TempDir old(std::move(*this));
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, std::string_view content, unsigned mode) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) throw_errno("open " + path);
  if (::fchmod(fd.get(), mode) != 0) throw_errno("fchmod " + path);
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()))
    throw_errno("write " + path);
}

std::string make_fifo(const TempDir& dir, const std::string& name) {
  std::string path = dir / name;
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

}  // namespace rlock::test
