#include "exec/guardian.hpp"

#include <sched.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "util/clock.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

constexpr char kDone = 'd';
constexpr int kGuardianFd = 3;

void sleep_for(Millis d) {
  timespec ts{static_cast<time_t>(d.count() / 1000), static_cast<long>(d.count() % 1000 * 1'000'000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Reads exactly `n` bytes; false at EOF (every writer gone) or error.
bool read_full(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Sends the group `signo`; if members remain after `kill_after`, SIGKILL. Returns when the
// group is empty or KILL was sent.
void stop_group(pid_t pgid, int signo, Millis kill_after) {
  if (kill(-pgid, signo) != 0 && errno == ESRCH) return;
  if (signo != SIGKILL && signo != SIGCONT) kill(-pgid, SIGCONT);  // a stopped job can't act on it
  Deadline hard = SteadyClock::now() + kill_after;
  while (group_alive(pgid)) {
    if (SteadyClock::now() >= hard) {
      kill(-pgid, SIGKILL);
      return;
    }
    sleep_for(kGroupPollInterval);
  }
}

// What the guardian gets, copied onto its own stack first thing.
struct GuardianArgs {
  int life_fd;    // its end of the socket pair
  int rlock_end;  // rlock's end: the guardian's copy must go, or rlock's death is no EOF
  int signo;
  long long kill_after_ms;
  bool close_range_ok;
};

constexpr size_t kGuardianStack = 64 * 1024;

// Runs in a process that shares rlock's memory (CLONE_VM) but has its own descriptor table
// and signal dispositions. It touches nothing of rlock's but its own stack, and makes only
// system calls that succeed while rlock lives, so it never writes rlock's errno then.
int guardian_entry(void* raw) {
  GuardianArgs a = *static_cast<GuardianArgs*>(raw);
  close(a.rlock_end);
  if (a.life_fd != kGuardianFd) dup2(a.life_fd, kGuardianFd);
  if (a.close_range_ok) syscall(SYS_close_range, kGuardianFd + 1u, ~0u, 0u);  // no Redis socket
  pid_t pgid = 0;
  if (!read_full(kGuardianFd, &pgid, sizeof pgid)) return 0;  // no job was started
  char byte = 0;
  if (read_full(kGuardianFd, &byte, 1) && byte == kDone) return 0;
  stop_group(pgid, a.signo, Millis(a.kill_after_ms));  // rlock died while the job ran
  return 0;
}

}  // namespace

bool group_alive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno == EPERM; }

Guardian Guardian::start(int signo, Millis kill_after) {
  // A socket pair rather than a pipe: send(MSG_NOSIGNAL) to a guardian that is gone fails
  // with EPIPE instead of killing rlock or the job with SIGPIPE.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(71, std::string("socketpair: ") + std::strerror(errno));
  }
  Fd life_r(fds[0]), life_w(fds[1]);
  // clone(CLONE_VM) rather than fork: a fork would make every page rlock writes afterwards
  // a copy-on-write fault (about 0.4 ms per exec here), and an exec would cost a start-up.
  // The stack is never unmapped: the guardian may outlive rlock.
  void* stack = mmap(nullptr, kGuardianStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                     -1, 0);
  if (stack == MAP_FAILED) throw Error(71, std::string("mmap: ") + std::strerror(errno));
  auto* args = static_cast<GuardianArgs*>(stack);
  *args = {life_r.get(), life_w.get(), signo, kill_after.count(),
           syscall(SYS_close_range, ~0u - 1, ~0u, 0u) == 0};
  pid_t pid = clone(guardian_entry, static_cast<char*>(stack) + kGuardianStack, CLONE_VM | SIGCHLD, args);
  if (pid < 0) throw Error(71, std::string("clone: ") + std::strerror(errno));
  Guardian g;
  g.pid_ = pid;
  g.life_ = std::move(life_w);
  return g;
}

void Guardian::finish() {
  if (life_.get() < 0) return;
  (void)!send(life_.get(), &kDone, 1, MSG_NOSIGNAL);
  life_.reset();
}

}  // namespace rlock::exec
