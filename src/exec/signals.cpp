#include "exec/signals.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.hpp"

namespace rlock::exec {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

struct NamedSignal {
  const char* name;
  int signo;
};
constexpr NamedSignal kNames[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
    {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"ALRM", SIGALRM},
    {"ABRT", SIGABRT}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}, {"WINCH", SIGWINCH},
};

// SignalFds live on the main thread only, nested at most: the outermost one records the
// mask rlock started with.
int live_signal_fds = 0;
sigset_t started_with{};

}  // namespace

SignalFd::SignalFd() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  // With SIGCHLD ignored (inherited from a parent that set SIG_IGN) the kernel would reap
  // the job itself and rlock could never learn that it ended.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &dfl, nullptr);
  sigprocmask(SIG_BLOCK, &set, &original_);
  fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) {
    sigprocmask(SIG_SETMASK, &original_, nullptr);
    throw Error(kExitUnavailable, std::string("signalfd: ") + std::strerror(errno));
  }
  if (live_signal_fds++ == 0) started_with = original_;
}

SignalFd::~SignalFd() {
  --live_signal_fds;
  close(fd_);
  sigprocmask(SIG_SETMASK, &original_, nullptr);
}

const sigset_t& SignalFd::original_mask() const { return started_with; }

namespace {
bool sigpipe_default = true;
}  // namespace

void ignore_sigpipe() {
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  if (sigaction(SIGPIPE, &ign, &old) == 0) sigpipe_default = old.sa_handler == SIG_DFL;
}

bool sigpipe_was_default() { return sigpipe_default; }

std::optional<int> SignalFd::next() {
  signalfd_siginfo info;
  ssize_t n = read(fd_, &info, sizeof info);
  if (n != static_cast<ssize_t>(sizeof info)) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

bool is_forwarded(int signo) {
  for (int s : kForwarded) {
    if (s == signo) return true;
  }
  return false;
}

int parse_signal(const char* text) {
  std::string upper;
  for (const char* p = text; *p; ++p)
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  if (upper.rfind("SIG", 0) == 0) upper.erase(0, 3);
  if (!upper.empty() && upper.find_first_not_of("0123456789") == std::string::npos &&
      upper.size() < 4) {
    int n = std::stoi(upper);
    if (n >= 1 && n < NSIG) return n;
  }
  for (const auto& s : kNames) {
    if (upper == s.name) return s.signo;
  }
  throw UsageError(std::string("--on-lost: unknown signal '") + text +
                   "' (use a name such as TERM, INT, HUP, KILL, USR1, or a number)");
}

}  // namespace rlock::exec
