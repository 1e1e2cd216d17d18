#include "util/owner.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <cstdint>

namespace rlock {

std::string default_owner() {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  uint32_t rnd = 0;
  if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) rnd = static_cast<uint32_t>(getpid()) * 2654435761u;
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s:%d:%08x", host, static_cast<int>(getpid()), rnd);
  return buf;
}

}  // namespace rlock
