#include "util/name.hpp"

#include <cstdio>
#include <string>

#include "util/error.hpp"
#include "util/utf8.hpp"

namespace rlock {
namespace {

void validate_text(std::string_view text, const char* what) {
  if (text.empty()) throw UsageError(std::string(what) + " must not be empty");
  if (text.size() > kMaxNameBytes) {
    throw UsageError(std::string(what) + " is " + std::to_string(text.size()) + " bytes; at most " +
                     std::to_string(kMaxNameBytes) + " are allowed");
  }
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      throw UsageError(std::string(what) + " contains a control character (byte " +
                       std::to_string(c) + "); use printable characters");
    }
  }
  if (size_t at = invalid_utf8_at(text); at != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[at]));
    throw UsageError(std::string(what) + " is not valid UTF-8 (byte " + byte + " at offset " +
                     std::to_string(at) + ")");
  }
}

}  // namespace

void validate_name(std::string_view name) { validate_text(name, "name"); }
void validate_owner(std::string_view owner) { validate_text(owner, "owner"); }
void validate_participant_id(std::string_view id) { validate_text(id, "--id"); }
void validate_client_id(std::string_view id) { validate_text(id, "--client"); }

}  // namespace rlock
