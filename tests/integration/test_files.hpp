// Files and directories of a test: an owned descriptor, a temporary directory, whole-file
// reads and writes, FIFOs.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace rlock::test {

// Owns a file descriptor (-1 when empty) and closes it on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes the descriptor (if any) and becomes empty.
  void reset();

 private:
  int fd_ = -1;
};

// A fresh directory under /tmp, removed with its contents on destruction. Move-only.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Path of `name` inside the directory, as a string.
  std::string operator/(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Reads a whole file; throws if it cannot be opened.
std::string read_file(const std::string& path);
// Writes (truncates) a file with the given permission bits.
void write_file(const std::string& path, std::string_view content, unsigned mode = 0644);

// A FIFO named `name` in `dir` (a test's rendezvous with a job); fails the test if it
// cannot be made.
std::string make_fifo(const TempDir& dir, const std::string& name);

}  // namespace rlock::test
