#include "exec/guardian.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "util/clock.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

// No event announces that a process group became empty, so this one loop checks it
// every 20ms; it only runs while a job is being stopped.
constexpr Millis kGroupPollInterval{20};
constexpr char kDone = 'd';

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

// Closes every descriptor from `first` up. close_range(2) needs Linux 5.9; older kernels
// get the list from /proc.
void close_from(int first) {
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0u, 0u) == 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) {
    for (long fd = first, max = sysconf(_SC_OPEN_MAX); fd < max; ++fd) close(static_cast<int>(fd));
    return;
  }
  std::vector<int> open_fds;
  while (dirent* e = readdir(dir)) {
    int fd = std::atoi(e->d_name);
    if (fd >= first && fd != dirfd(dir)) open_fds.push_back(fd);
  }
  closedir(dir);
  for (int fd : open_fds) close(fd);
}

[[noreturn]] void guardian_main(int life_fd, int rlock_end, int signo, Millis kill_after) {
  // Keep nothing of rlock's: no Redis socket, no stdio that a reader waits to close, and
  // above all not rlock's end of the socket, or rlock's death would never show as EOF.
  close(rlock_end);
  int devnull = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) dup2(devnull, fd);
  dup2(life_fd, 3);
  close_from(4);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(s, SIG_IGN);
  pid_t pgid = 0;
  if (!read_full(3, &pgid, sizeof pgid)) _exit(0);  // no job was started
  char byte = 0;
  if (read_full(3, &byte, 1) && byte == kDone) _exit(0);
  stop_group(pgid, signo, kill_after);
  _exit(0);
}

}  // namespace

bool group_alive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno == EPERM; }

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

Guardian Guardian::start(int signo, Millis kill_after) {
  // A socket pair rather than a pipe: send(MSG_NOSIGNAL) to a guardian that is gone fails
  // with EPIPE instead of killing rlock or the job with SIGPIPE.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(71, std::string("socketpair: ") + std::strerror(errno));
  }
  Fd life_r(fds[0]), life_w(fds[1]);
  // Forked twice so that it is not rlock's child: rlock, the job's subreaper, waits for
  // all of its children before it releases, and the guardian lives on until then.
  pid_t middle = fork();
  if (middle < 0) throw Error(71, std::string("fork: ") + std::strerror(errno));
  if (middle == 0) {
    if (fork() == 0) guardian_main(life_r.get(), life_w.get(), signo, kill_after);
    _exit(0);
  }
  while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
  }
  Guardian g;
  g.life_ = std::move(life_w);
  return g;
}

void Guardian::finish() {
  if (life_.get() < 0) return;
  (void)!send(life_.get(), &kDone, 1, MSG_NOSIGNAL);
  life_.reset();
}

}  // namespace rlock::exec
