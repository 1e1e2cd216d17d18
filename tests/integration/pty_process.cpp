// PtyProcess: the fork onto the slave side, and reading the master side.
#include "pty_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "harness_internal.hpp"

namespace rlock::test {

using detail::pidfd_open;
using detail::poll_readable;
using detail::throw_errno;

struct PtyProcess::State {
  pid_t pid = -1;
  Fd master;
  Fd pidfd;
  std::string out;
  size_t matched = 0;
  bool reaped = false;
  int status = -1;

  // Reads what the terminal has; false once the slave side is closed.
  bool read_some(Clock::time_point deadline) {
    if (!master) return false;
    if (!poll_readable(master.get(), deadline)) return true;
    char chunk[4096];
    ssize_t n = ::read(master.get(), chunk, sizeof chunk);
    if (n > 0) {
      out.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    master.reset();  // EIO: no process has the slave open any more
    return false;
  }

  void reap() {
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
    status = decode_wait_status(ws);
    pidfd.reset();
  }
};

PtyProcess::PtyProcess(const std::vector<std::string>& argv, const Env& env_extra)
    : s_(std::make_unique<State>()) {
  Fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0)
    throw_errno("posix_openpt");
  std::string slave = ::ptsname(master.get());
  std::vector<std::string> env = child_env(env_extra);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  sigset_t none;
  sigemptyset(&none);
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    ::setsid();
    int fd = ::open(slave.c_str(), O_RDWR);  // the first terminal a session leader opens...
    if (fd < 0) ::_exit(126);
    ::ioctl(fd, TIOCSCTTY, 0);  // ...becomes its controlling terminal (explicitly, to be sure)
    ::dup2(fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (fd > 2) ::close(fd);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  s_->pid = pid;
  s_->pidfd = Fd(pidfd_open(pid));
  s_->master = std::move(master);
  ::fcntl(s_->master.get(), F_SETFL, ::fcntl(s_->master.get(), F_GETFL) | O_NONBLOCK);
}

PtyProcess::~PtyProcess() {
  if (s_ && !s_->reaped) {
    ::kill(s_->pid, SIGKILL);
    s_->reap();
  }
}

PtyProcess::PtyProcess(PtyProcess&&) noexcept = default;

PtyProcess& PtyProcess::operator=(PtyProcess&& other) noexcept {
  if (this != &other) {
    PtyProcess old(std::move(*this));
    s_ = std::move(other.s_);
  }
  return *this;
}

pid_t PtyProcess::pid() const { return s_->pid; }
const std::string& PtyProcess::output() const { return s_->out; }

void PtyProcess::send(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(s_->master.get(), text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      poll_readable(s_->master.get(), deadline(10ms));
      continue;
    }
    if (n < 0) throw_errno("write to pty");
    text.remove_prefix(static_cast<size_t>(n));
  }
}

bool PtyProcess::expect(std::string_view text, Clock::time_point deadline) {
  for (;;) {
    size_t at = s_->out.find(text, s_->matched);
    if (at != std::string::npos) {
      s_->matched = at + text.size();
      return true;
    }
    if (Clock::now() >= deadline || !s_->read_some(deadline)) return false;
  }
}

bool PtyProcess::await(const std::function<bool(const std::string&)>& done,
                       Clock::time_point deadline) {
  for (;;) {
    if (done(s_->out)) return true;
    if (Clock::now() >= deadline || !s_->read_some(deadline)) return false;
  }
}

std::optional<int> PtyProcess::wait(Clock::time_point deadline) {
  while (!s_->reaped) {
    if (poll_readable(s_->pidfd.get(), Clock::now())) {
      while (s_->master && poll_readable(s_->master.get(), Clock::now()) &&
             s_->read_some(Clock::now())) {
      }
      s_->reap();
      break;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    if (s_->master) {
      s_->read_some(std::min(deadline, Clock::now() + 20ms));
    } else {
      poll_readable(s_->pidfd.get(), deadline);
    }
  }
  return s_->status;
}

}  // namespace rlock::test
