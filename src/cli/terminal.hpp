#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rlock::cli {

// A terminal's size in character cells.
struct TerminalSize {
  size_t rows = 24;
  size_t columns = 80;
};

// The size of the terminal on `fd`, asked anew each time (so a resize takes effect at the
// next draw); 24x80 when `fd` is no terminal or the terminal does not say.
TerminalSize terminal_size(int fd);

// One column less than the terminal's width: a line that fills the last column wraps on
// some terminals, and an erase or a cursor move would then hit the wrong line.
size_t usable_columns(int fd);

// Whether this process group is the foreground of the terminal on `fd`: writing to the
// terminal from the background stops rlock (SIGTTOU, with `stty tostop`) or lands in the
// middle of the shell's output, and so does changing its modes.
bool in_foreground(int fd);

// `text` cut to at most `columns` terminal columns, counting conservatively (a non-ASCII
// character as two), so that it never wraps; no UTF-8 sequence is cut.
std::string fit_columns(const std::string& text, size_t columns);

// Writes `bytes` to the terminal on `fd`, whole; a terminal that fails (hung up) is not
// worth an error: SIGHUP follows.
void write_terminal(int fd, std::string_view bytes);

}  // namespace rlock::cli
