#include "util/utf8.hpp"

namespace rlock {

size_t utf8_length(std::string_view text, size_t i, unsigned* code_point) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) {
    if (code_point) *code_point = lead;
    return 1;
  }
  size_t len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (lead > 0xf4 || len == 0 || i + len > text.size()) return 0;
  unsigned cp = lead & (0x3f >> (len - 1));
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3f);
  }
  static const unsigned kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  if (code_point) *code_point = cp;
  return len;
}

size_t invalid_utf8_at(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t len = utf8_length(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace rlock
