// Spawned, run, the rlock runners, the lazy reaper (and its start-up in this binary),
// parent_of, wait_gone and PidGuard.
#include "processes.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "harness_internal.hpp"

extern char** environ;

namespace rlock::test {

using detail::pidfd_open;
using detail::poll_readable;
using detail::poll_timeout_ms;
using detail::spawn_process;
using detail::throw_errno;

namespace {

// A write to a dead server or a closed pipe must be an error here, not the death of the
// test process. Children get default dispositions back (POSIX_SPAWN_SETSIGDEF).
const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

constexpr const char* kLazyReaperVar = "RLOCK_IT_LAZY_REAPER";

// The helper of spawn_under_lazy_reaper: this test binary started again with kLazyReaperVar
// set runs argv[1..] as a child subreaper that waits for that one child only.
[[noreturn]] void run_lazy_reaper() {
  ::unsetenv(kLazyReaperVar);
  std::string cmdline = read_file("/proc/self/cmdline");
  std::vector<char*> args;
  for (size_t at = 0; at < cmdline.size(); at = cmdline.find('\0', at) + 1)
    args.push_back(&cmdline[at]);
  args.push_back(nullptr);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 || args.size() < 3) ::_exit(125);
  pid_t pid = ::fork();
  if (pid < 0) ::_exit(125);
  if (pid == 0) {
    // Dies with the helper (whose Spawned SIGKILLs it when a test fails), so nothing stays.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::signal(SIGPIPE, SIG_DFL);
    ::execvp(args[1], args.data() + 1);
    ::_exit(127);
  }
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  ::_exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
}

const bool kIsLazyReaper = [] {
  if (const char* v = std::getenv(kLazyReaperVar); v != nullptr && std::string_view(v) == "1")
    run_lazy_reaper();
  return false;
}();

int pidfd_send_signal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

// A pipe whose both ends are close-on-exec; the read end is non-blocking.
std::pair<Fd, Fd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd read_end(fds[0]), write_end(fds[1]);
  ::fcntl(read_end.get(), F_SETFL, ::fcntl(read_end.get(), F_GETFL) | O_NONBLOCK);
  return {std::move(read_end), std::move(write_end)};
}

// Reads everything `fd` has now into `buf`; closes it at EOF.
void drain(Fd& fd, std::string& buf) {
  char chunk[65536];
  while (fd) {
    ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      fd.reset();
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      fd.reset();
    }
  }
}

const std::filesystem::path& suite_home() {
  static const TempDir home;
  return home.path();
}

}  // namespace

int decode_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

struct Spawned::State {
  pid_t pid = -1;
  Fd pidfd, out_fd, err_fd;
  std::string out, err;
  size_t out_pos = 0, err_pos = 0;
  bool reaped = false;
  int status = -1;
  Clock::time_point exit_time{};

  void reap() {
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
    status = decode_wait_status(ws);
    exit_time = Clock::now();
    pidfd.reset();
    // All the process wrote is in the pipes now; what descendants may write later is
    // not its output, and they may hold the pipes open for long.
    drain(out_fd, out);
    drain(err_fd, err);
    out_fd.reset();
    err_fd.reset();
  }
};

Spawned::Spawned(const std::vector<std::string>& argv, const Env& env_extra)
    : s_(std::make_unique<State>()) {
  auto [out_r, out_w] = make_pipe();
  auto [err_r, err_w] = make_pipe();
  s_->pid = spawn_process(argv, child_env(env_extra), out_w.get(), err_w.get());
  s_->pidfd = Fd(pidfd_open(s_->pid));
  if (!s_->pidfd) throw_errno("pidfd_open");
  s_->out_fd = std::move(out_r);
  s_->err_fd = std::move(err_r);
}

Spawned::~Spawned() {
  if (s_ && !s_->reaped) {
    ::kill(s_->pid, SIGKILL);
    s_->reap();
  }
}

Spawned::Spawned(Spawned&&) noexcept = default;

Spawned& Spawned::operator=(Spawned&& other) noexcept {
  if (this != &other) {
    Spawned old(std::move(*this));
    s_ = std::move(other.s_);
  }
  return *this;
}

pid_t Spawned::pid() const { return s_->pid; }
const std::string& Spawned::out() const { return s_->out; }
const std::string& Spawned::err() const { return s_->err; }
Clock::time_point Spawned::exit_time() const { return s_->exit_time; }

bool Spawned::pump(const std::vector<State*>& procs, Clock::time_point deadline,
                   const std::function<bool()>& done) {
  for (;;) {
    if (done()) return true;
    std::vector<pollfd> fds;
    std::vector<std::pair<State*, int>> owners;  // 0 stdout, 1 stderr, 2 pidfd
    for (State* p : procs) {
      auto watch = [&](int fd, int which) {
        fds.push_back({fd, POLLIN, 0});
        owners.emplace_back(p, which);
      };
      if (p->out_fd) watch(p->out_fd.get(), 0);
      if (p->err_fd) watch(p->err_fd.get(), 1);
      if (!p->reaped) watch(p->pidfd.get(), 2);
    }
    if (fds.empty()) return done();
    int n = ::poll(fds.data(), fds.size(), poll_timeout_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("poll");
    if (n == 0) return done();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [p, which] = owners[i];
      if (which == 0) drain(p->out_fd, p->out);
      if (which == 1) drain(p->err_fd, p->err);
      if (which == 2 && !p->reaped) p->reap();
    }
  }
}

std::optional<std::string> Spawned::take_line(bool from_stdout, Clock::time_point deadline) {
  std::string& buf = from_stdout ? s_->out : s_->err;
  size_t& pos = from_stdout ? s_->out_pos : s_->err_pos;
  Fd& fd = from_stdout ? s_->out_fd : s_->err_fd;
  pump({s_.get()}, deadline, [&] { return buf.find('\n', pos) != std::string::npos || !fd; });
  size_t nl = buf.find('\n', pos);
  if (nl != std::string::npos) {
    std::string line = buf.substr(pos, nl - pos);
    pos = nl + 1;
    return line;
  }
  if (!fd && pos < buf.size()) {
    std::string rest = buf.substr(pos);
    pos = buf.size();
    return rest;
  }
  return std::nullopt;
}

std::optional<std::string> Spawned::read_line(Clock::time_point deadline) {
  return take_line(true, deadline);
}

std::optional<std::string> Spawned::read_err_line(Clock::time_point deadline) {
  return take_line(false, deadline);
}

std::optional<int> Spawned::wait(Clock::time_point deadline) {
  State* s = s_.get();
  pump({s}, deadline, [s] { return s->reaped; });
  if (!s->reaped) return std::nullopt;
  return s->status;
}

bool Spawned::running() { return !wait(Clock::now()).has_value(); }

void Spawned::kill(int sig) {
  if (!s_->reaped) ::kill(s_->pid, sig);
}

bool Spawned::wait_all(std::initializer_list<Spawned*> procs, Clock::time_point deadline) {
  std::vector<State*> states;
  for (Spawned* p : procs) states.push_back(p->s_.get());
  return pump(states, deadline, [&] {
    return std::all_of(states.begin(), states.end(), [](State* s) { return s->reaped; });
  });
}

RunResult run(const std::vector<std::string>& argv, const Env& env_extra,
              std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  Spawned proc(argv, env_extra);
  auto status = proc.wait(start + timeout);
  if (!status) {
    proc.kill(SIGKILL);
    proc.wait(deadline(10s));
    std::string cmdline;
    for (const auto& a : argv) cmdline += a + " ";
    FAIL("timed out after " << timeout.count() << "ms: " << cmdline << "\nstdout: " << proc.out()
                            << "\nstderr: " << proc.err());
  }
  return RunResult{*status, proc.out(), proc.err(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(proc.exit_time() - start)};
}

std::vector<std::string> child_env(const Env& extra) {
  std::vector<std::string> env;
  auto overridden = [&](std::string_view name) {
    return std::any_of(extra.begin(), extra.end(),
                       [&](const auto& kv) { return kv.first == name; });
  };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto name = kv.substr(0, kv.find('='));
    if (name.starts_with("RLOCK_") || name == "REDIS_URL" || name == "XDG_CONFIG_HOME" ||
        name == "HOME" || overridden(name))
      continue;
    env.emplace_back(kv);
  }
  if (!overridden("HOME")) env.push_back("HOME=" + suite_home().string());
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::string rlock_binary() {
  static const std::string binary = [] {
    const char* other = std::getenv("RLOCK_TEST_BINARY");
    return std::string(other != nullptr && *other != '\0' ? other : RLOCK_BINARY);
  }();
  return binary;
}

std::vector<std::string> rlock_argv(const RedisServer& server,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> argv{rlock_binary(), "--url", server.topology_url()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

RunResult rlock(const RedisServer& server, const std::vector<std::string>& args,
                const Env& env_extra, std::chrono::milliseconds timeout) {
  return run(rlock_argv(server, args), env_extra, timeout);
}

RunResult rlock_raw(const std::vector<std::string>& args, const Env& env_extra,
                    std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{rlock_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, env_extra, timeout);
}

Spawned spawn_rlock(const RedisServer& server, const std::vector<std::string>& args,
                    const Env& env_extra) {
  return Spawned(rlock_argv(server, args), env_extra);
}

Spawned spawn_under_lazy_reaper(const std::vector<std::string>& argv, const Env& env_extra) {
  std::vector<std::string> helper{"/proc/self/exe"};
  helper.insert(helper.end(), argv.begin(), argv.end());
  Env env = env_extra;
  env.emplace_back(kLazyReaperVar, "1");
  return Spawned(helper, env);
}

pid_t parent_of(pid_t pid) {
  std::string stat;
  try {
    stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const std::runtime_error&) {
    return -1;
  }
  // pid (comm) state ppid ...: comm may hold spaces and parentheses, so parse after the last ')'.
  std::istringstream rest(stat.substr(stat.rfind(')') + 1));
  std::string state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

bool wait_gone(pid_t pid, std::chrono::milliseconds timeout) {
  Fd fd(pidfd_open(pid));
  if (!fd) {
    if (errno == ESRCH) return true;
    throw_errno("pidfd_open");
  }
  return poll_readable(fd.get(), deadline(timeout));
}

PidGuard::PidGuard(pid_t pid) : pid_(pid), pidfd_(pidfd_open(pid)) {
  if (!pidfd_ && errno != ESRCH) throw_errno("pidfd_open");
}

PidGuard::~PidGuard() {
  if (pidfd_ && !poll_readable(pidfd_.get(), Clock::now()))
    pidfd_send_signal(pidfd_.get(), SIGKILL);
}

bool PidGuard::wait_gone(std::chrono::milliseconds timeout) {
  return !pidfd_ || poll_readable(pidfd_.get(), deadline(timeout));
}

}  // namespace rlock::test
