#include "cli/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rlock::cli {

TerminalSize terminal_size(int fd) {
  TerminalSize size;
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0) {
    if (ws.ws_row > 0) size.rows = ws.ws_row;
    if (ws.ws_col > 0) size.columns = ws.ws_col;
  }
  return size;
}

size_t usable_columns(int fd) {
  size_t cols = terminal_size(fd).columns;
  return cols > 1 ? cols - 1 : 1;
}

bool in_foreground(int fd) { return tcgetpgrp(fd) == getpgrp(); }

std::string fit_columns(const std::string& text, size_t columns) {
  size_t used = 0, i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t width = c < 0x80 ? 1 : 2;
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (used + width > columns) break;
    used += width;
    i = std::min(text.size(), i + len);
  }
  return text.substr(0, i);
}

void write_terminal(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace rlock::cli
