#include "util/name.hpp"

#include <string>

#include "util/error.hpp"

namespace rlock {

void validate_name(std::string_view name) {
  if (name.empty()) throw UsageError("name must not be empty");
  if (name.size() > kMaxNameBytes) {
    throw UsageError("name is " + std::to_string(name.size()) + " bytes; at most " +
                     std::to_string(kMaxNameBytes) + " are allowed");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      throw UsageError("name contains a control character (byte " + std::to_string(c) +
                       "); use printable characters");
    }
  }
}

}  // namespace rlock
