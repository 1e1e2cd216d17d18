#pragma once

#include <termios.h>

#include <cstddef>
#include <optional>
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

// A full-screen display on the terminal of `out_fd` (RAII, move-only): on enter(), the
// alternate screen (the shell's screen comes back untouched afterwards), the cursor
// hidden, and, when `in_fd` is that terminal too, keys read one at a time without echo
// (non-canonical mode; ^C, ^Z and ^\ still send their signals). leave() and the
// destructor undo all of it, also from the background.
class FullScreen {
 public:
  FullScreen(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {}
  ~FullScreen() { leave(); }
  FullScreen(const FullScreen&) = delete;
  FullScreen& operator=(const FullScreen&) = delete;

  // Enters the display when rlock is in the foreground and has not entered it yet (after
  // a stop the shell takes the terminal back: see leave()); true when it is entered.
  bool enter();
  // Gives the terminal back as it was: cursor shown, alternate screen left, modes restored.
  void leave();
  bool entered() const { return entered_; }
  // Whether keys come through in_fd (a terminal in non-canonical mode).
  bool reads_keys() const { return saved_.has_value(); }

 private:
  int in_fd_;
  int out_fd_;
  bool entered_ = false;
  std::optional<termios> saved_;  // in_fd's modes before enter()
};

// The signals a full-screen display answers (WINCH: redraw at the new size; TSTP: give
// the terminal back, then stop; CONT: take it again), blocked and read from a signalfd
// so that a poll waits for them next to sockets and keys. Restores the mask when
// destroyed (move-only).
class TerminalSignals {
 public:
  TerminalSignals();
  ~TerminalSignals();
  TerminalSignals(const TerminalSignals&) = delete;
  TerminalSignals& operator=(const TerminalSignals&) = delete;

  int fd() const { return fd_; }
  // The next pending signal number, or nullopt when none is pending.
  std::optional<int> next();

 private:
  int fd_ = -1;
  sigset_t original_{};
};

}  // namespace rlock::cli
