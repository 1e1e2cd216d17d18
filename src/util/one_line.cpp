#include "util/one_line.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace rlock {
namespace {

void append_hex(std::string& out, unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

void append_control(std::string& out, unsigned char c) {
  switch (c) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      append_hex(out, c);
  }
}

// Length of the well-formed UTF-8 sequence starting at text[i] (overlongs, surrogates and
// code points above U+10FFFF are not), or 0.
size_t utf8_length(std::string_view text, size_t i, unsigned* code_point) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (lead > 0xf4 || len == 0 || i + len > text.size()) return 0;
  unsigned cp = lead & (0x3f >> (len - 1));
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3f);
  }
  static const unsigned kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *code_point = cp;
  return len;
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      append_control(out, c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    unsigned cp = 0;
    size_t len = utf8_length(text, i, &cp);
    if (len == 0) {
      append_hex(out, c);
      ++i;
    } else if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

void print_diagnostic(std::string_view message) {
  std::string line = "rlock: " + one_line(message) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  std::fflush(stderr);
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report that stderr is gone
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace rlock
