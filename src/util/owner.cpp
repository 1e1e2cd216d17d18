#include "util/owner.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>

namespace rlock {

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (getrandom(raw.data(), bytes, 0) != static_cast<ssize_t>(bytes)) {
    // No entropy source: pid and monotonic time still differ between processes.
    uint64_t mix =
        static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (size_t i = 0; i < bytes; ++i) raw[i] = static_cast<char>(mix >> (8 * (i % 8)));
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string default_owner() {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + random_hex(4);
}

}  // namespace rlock
