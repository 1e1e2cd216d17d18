#include "exec/guardian.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "util/clock.hpp"
#include "util/error.hpp"

extern char** environ;

namespace rlock::exec {
namespace {

// No event announces that a process group became empty, so this one loop checks it
// every 20ms; it only runs while a job is being stopped.
constexpr Millis kGroupPollInterval{20};
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
  // with EPIPE instead of killing rlock or the job with SIGPIPE. Close-on-exec, so the
  // guardian keeps only the end it gets as fd 3.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(71, std::string("socketpair: ") + std::strerror(errno));
  }
  Fd life_r(fds[0]), life_w(fds[1]);
  // rlock itself in guardian mode, started with posix_spawn (vfork + exec): a fork would
  // make every page rlock touches afterwards a copy-on-write fault.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, life_r.get(), kGuardianFd);  // before fds 0-2 are reused
  for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
  std::string signo_arg = std::to_string(signo), kill_after_arg = std::to_string(kill_after.count());
  char* argv[] = {const_cast<char*>("rlock"), const_cast<char*>(kGuardianFlag), signo_arg.data(),
                  kill_after_arg.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(71, std::string("cannot start the guardian: ") + std::strerror(rc));
  Guardian g;
  g.pid_ = pid;
  g.life_ = std::move(life_w);
  return g;
}

int guardian_main(int argc, char** argv) {
  if (argc != 4) return kExitUsage;
  int signo = std::atoi(argv[2]);
  Millis kill_after(std::atoll(argv[3]));
  // Nothing of the caller's that was not close-on-exec, so no reader waits for us to close.
  close_from(kGuardianFd + 1);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(s, SIG_IGN);
  pid_t pgid = 0;
  if (!read_full(kGuardianFd, &pgid, sizeof pgid)) return 0;  // no job was started
  char byte = 0;
  if (read_full(kGuardianFd, &byte, 1) && byte == kDone) return 0;
  stop_group(pgid, signo, kill_after);  // rlock died while the job ran
  return 0;
}

void Guardian::finish() {
  if (life_.get() < 0) return;
  (void)!send(life_.get(), &kDone, 1, MSG_NOSIGNAL);
  life_.reset();
}

}  // namespace rlock::exec
