#pragma once

#include <cstring>

namespace rlock::exec {

// Whether the text of a cgroup.events file (`n` bytes of `text`) says "populated 1": a
// process is still in the cgroup. Shared by rlock and its guardian, which may not allocate.
inline bool events_say_populated(const char* text, long n) {
  constexpr char kKey[] = "populated ";
  constexpr long kLen = sizeof kKey - 1;
  for (long i = 0; i + kLen < n; ++i) {
    if (std::memcmp(text + i, kKey, kLen) == 0) return text[i + kLen] == '1';
  }
  return false;
}

}  // namespace rlock::exec
