#include "util/name.hpp"

#include <cstdio>
#include <string>

#include "util/error.hpp"

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

size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return i;
    unsigned cp = len == 1 ? c : c & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return i;
    i += len;
  }
  return std::string_view::npos;
}

void validate_name(std::string_view name) { validate_text(name, "name"); }
void validate_owner(std::string_view owner) { validate_text(owner, "owner"); }
void validate_participant_id(std::string_view id) { validate_text(id, "--id"); }
void validate_client_id(std::string_view id) { validate_text(id, "--client"); }

}  // namespace rlock
