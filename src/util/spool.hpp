#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace rlock {

// An append-only byte buffer read back once, whose memory stays bounded whatever is
// appended: up to `memory_bound` bytes stay in memory (a small output never touches the
// disk), beyond that everything goes to an unnamed temporary file in $TMPDIR (else /tmp),
// which vanishes with the process. Move-only: it owns the file.
class Spool {
 public:
  explicit Spool(size_t memory_bound) : bound_(memory_bound) {}
  Spool(Spool&& other) noexcept;
  Spool& operator=(Spool&& other) = delete;
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  ~Spool();

  // Throws Error (exit 74) when the temporary file cannot be made or written.
  void append(std::string_view bytes);
  bool empty() const { return buffer_.empty() && fd_ < 0; }
  // Hands everything appended, in order, to `out` in pieces of at most about the memory
  // bound. Throws Error (exit 74) when the temporary file cannot be read.
  void drain(const std::function<void(const std::string&)>& out);

 private:
  void flush_to_file();

  size_t bound_;
  std::string buffer_;
  int fd_ = -1;
};

}  // namespace rlock
