#include "util/name.hpp"

#include <cstdio>
#include <string>

#include "util/error.hpp"
#include "util/utf8.hpp"

namespace rlock {
namespace {

void validate_text(std::string_view text, const char* what, size_t max_bytes = kMaxNameBytes) {
  if (text.empty()) throw UsageError(std::string(what) + " must not be empty");
  if (text.size() > max_bytes) {
    throw UsageError(std::string(what) + " is " + std::to_string(text.size()) + " bytes; at most " +
                     std::to_string(max_bytes) + " are allowed");
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

void validate_note(std::string_view note) {
  validate_text(note, "--note", kMaxNoteBytes);
  for (size_t i = 0; i < note.size();) {
    unsigned code_point = 0;
    size_t n = utf8_length(note, i, &code_point);
    if (code_point >= 0x80 && code_point <= 0x9f) {
      throw UsageError("--note contains a control character (U+00" +
                       std::string(1, "0123456789ABCDEF"[code_point >> 4]) +
                       "0123456789ABCDEF"[code_point & 15] + "); use printable characters");
    }
    i += n;
  }
}

}  // namespace rlock
