#include "util/one_line.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "util/utf8.hpp"

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
