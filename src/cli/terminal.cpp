#include "cli/terminal.hpp"

#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "util/error.hpp"

namespace rlock::cli {
namespace {

constexpr std::string_view kEnter = "\033[?1049h\033[?25l";  // alternate screen, cursor hidden
constexpr std::string_view kLeave = "\033[?25h\033[?1049l";

// SIGTTOU held back while restoring the terminal: a watch ended by a signal while in the
// background must still give the terminal back, not stop half-way.
class NoTtou {
 public:
  NoTtou() {
    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old_);
  }
  ~NoTtou() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  NoTtou(const NoTtou&) = delete;
  NoTtou& operator=(const NoTtou&) = delete;

 private:
  sigset_t old_{};
};

}  // namespace

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

bool FullScreen::enter() {
  if (entered_) return true;
  if (!in_foreground(out_fd_)) return false;
  termios t{};
  if (isatty(in_fd_) && tcgetattr(in_fd_, &t) == 0) {
    saved_ = t;
    t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    t.c_cc[VMIN] = 0;  // a read takes what is there and never blocks
    t.c_cc[VTIME] = 0;
    if (tcsetattr(in_fd_, TCSANOW, &t) != 0) saved_.reset();
  }
  write_terminal(out_fd_, kEnter);
  entered_ = true;
  return true;
}

void FullScreen::leave() {
  if (!entered_) return;
  NoTtou hold;
  write_terminal(out_fd_, kLeave);
  if (saved_) tcsetattr(in_fd_, TCSANOW, &*saved_);
  saved_.reset();
  entered_ = false;
}

TerminalSignals::TerminalSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGWINCH, SIGTSTP, SIGCONT}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, &original_);
  fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) {
    sigprocmask(SIG_SETMASK, &original_, nullptr);
    throw Error(kExitInternal, std::string("signalfd: ") + std::strerror(errno));
  }
}

TerminalSignals::~TerminalSignals() {
  close(fd_);
  sigprocmask(SIG_SETMASK, &original_, nullptr);
}

std::optional<int> TerminalSignals::next() {
  signalfd_siginfo info{};
  ssize_t n = read(fd_, &info, sizeof info);
  if (n != static_cast<ssize_t>(sizeof info)) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

}  // namespace rlock::cli
