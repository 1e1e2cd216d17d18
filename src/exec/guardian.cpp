#include "exec/guardian.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "exec/cgroup.hpp"
#include "exec/cgroup_events.hpp"
#include "util/error.hpp"

// The guardian's own code, in a section of its own so that it can lock just those pages
// in memory (raise_priority): locking all of rlock's (mlockall) cost every exec 0.4 ms.
#define GUARDIAN_CODE __attribute__((section("rlock_guardian_text")))
extern "C" const char __start_rlock_guardian_text[] __attribute__((visibility("hidden")));
extern "C" const char __stop_rlock_guardian_text[] __attribute__((visibility("hidden")));

namespace rlock::exec {
namespace {

constexpr int kGuardianFd = 3;
constexpr size_t kGuardianStack = 64 * 1024;
constexpr size_t kPathMax = kMaxCgroupPath;
constexpr std::int64_t kNever = INT64_MAX;
constexpr std::int64_t kNsPerMs = 1'000'000;

// Everything below runs in the guardian: it shares rlock's memory (CLONE_VM), so it uses
// only its own stack and system calls, no allocation, no stdio, nothing of rlock's state.
// It shares rlock's errno too (same thread pointer), and it may act while rlock lives
// (frozen rlock, lease deadline): calls that can fail go through sys(), which returns
// -errno and leaves errno alone.

GUARDIAN_CODE long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                       long f = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 asm("x8") = n;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  register long x4 asm("x4") = e;
  register long x5 asm("x5") = f;
  asm volatile("svc 0"
               : "+r"(x0)
               : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
               : "memory");
  return x0;
#else
  int saved = errno;
  long r = syscall(n, a, b, c, d, e, f);
  if (r < 0) r = -errno;
  errno = saved;
  return r;
#endif
}

GUARDIAN_CODE long sys_kill(pid_t pid, int signo) { return sys(SYS_kill, pid, signo); }
GUARDIAN_CODE int sys_open(const char* path, int flags) {
  return static_cast<int>(sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), flags));
}
GUARDIAN_CODE long sys_read(int fd, void* buf, size_t n) {
  return sys(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
GUARDIAN_CODE long sys_write(int fd, const void* buf, size_t n) {
  return sys(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
GUARDIAN_CODE void sys_close(int fd) { sys(SYS_close, fd); }
GUARDIAN_CODE long sys_rmdir(const char* path) {
  return sys(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(path), AT_REMOVEDIR);
}

GUARDIAN_CODE std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

GUARDIAN_CODE void sleep_ms(long long ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000 * kNsPerMs)};
  sys(SYS_ppoll, 0, 0, reinterpret_cast<long>(&ts), 0, 8);
}

// True while any process of the group exists (zombies included).
GUARDIAN_CODE bool pgroup_alive(pid_t pgid) {
  long r = sys_kill(-pgid, 0);
  return r == 0 || r == -EPERM;
}

// dst = a + "/" + b (truncated to kPathMax).
GUARDIAN_CODE void join_path(char* dst, const char* a, const char* b) {
  size_t n = 0;
  for (; *a && n + 1 < kPathMax; ++a) dst[n++] = *a;
  if (n + 1 < kPathMax) dst[n++] = '/';
  for (; *b && n + 1 < kPathMax; ++b) dst[n++] = *b;
  dst[n] = '\0';
}

GUARDIAN_CODE void cg_write(const char* dir, const char* file, const char* text) {
  char path[kPathMax];
  join_path(path, dir, file);
  int fd = sys_open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  sys_write(fd, text, strlen(text));
  sys_close(fd);
}

// Sends `signo` to every pid listed in the cgroup's cgroup.procs.
GUARDIAN_CODE void cg_signal(const char* dir, int signo) {
  char path[kPathMax];
  join_path(path, dir, "cgroup.procs");
  int fd = sys_open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[1024];
  long pid = 0;
  bool in_number = false;
  long n;
  while ((n = sys_read(fd, buf, sizeof buf)) > 0) {
    for (long i = 0; i < n; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
        in_number = true;
      } else {
        if (in_number && pid > 0) sys_kill(static_cast<pid_t>(pid), signo);
        pid = 0;
        in_number = false;
      }
    }
  }
  if (in_number && pid > 0) sys_kill(static_cast<pid_t>(pid), signo);
  sys_close(fd);
}

// cgroup.events says "populated 1" while any process is in the cgroup.
GUARDIAN_CODE bool cg_populated(const char* dir) {
  char path[kPathMax];
  join_path(path, dir, "cgroup.events");
  int fd = sys_open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  long n = sys_read(fd, buf, sizeof buf - 1);
  sys_close(fd);
  if (n <= 0) return false;
  return events_say_populated(buf, n);
}

// What the guardian gets, copied onto its own stack first thing.
struct GuardianArgs {
  int life_fd;    // its end of the socket pair
  int rlock_end;  // rlock's end: the guardian's copy must go, or rlock's death is no EOF
  int signo;
  std::int64_t kill_after_ns;
  std::int64_t margin_ns;
  bool close_range_ok;
  char cgroup[kPathMax];  // the job's cgroup directory; "" = none
};

// The job as the guardian sees it.
class GuardedJob {
 public:
  GUARDIAN_CODE explicit GuardedJob(const GuardianArgs& a) : a_(a) {}

  GUARDIAN_CODE bool started() const { return pgid_ > 0; }
  GUARDIAN_CODE void started_as(pid_t pgid) { pgid_ = pgid; }
  GUARDIAN_CODE void valid_until(std::int64_t t) {
    if (!signalled_) valid_ns_ = t;  // once stopping has begun, it goes on
  }
  GUARDIAN_CODE bool killed() const { return killed_; }

  // When the guardian must act next (kNever: only a message can make it act).
  GUARDIAN_CODE std::int64_t next_step() const {
    if (!started() || killed_ || valid_ns_ == kNever) return kNever;
    if (!signalled_) return valid_ns_ - a_.kill_after_ns - a_.margin_ns;
    return kill_at_;
  }

  // Stopping has begun (signal now) or reached its KILL point.
  GUARDIAN_CODE void step() {
    if (!signalled_) {
      begin_stopping(now_ns() + a_.kill_after_ns);
    } else {
      signal(SIGKILL);
      killed_ = true;
    }
  }

  // rlock is gone: stop the job at once and wait until it is gone; remove the cgroup.
  GUARDIAN_CODE void stop_now() {
    if (started()) {
      if (!signalled_) begin_stopping(now_ns() + a_.kill_after_ns);
      std::int64_t give_up = kNever;
      while (alive()) {
        if (!killed_ && now_ns() >= kill_at_) step();
        if (killed_ && give_up == kNever) give_up = now_ns() + 10'000 * kNsPerMs;
        if (now_ns() >= give_up) break;
        sleep_ms(kGroupPollInterval.count());
      }
    }
    if (a_.cgroup[0] != '\0') {
      for (int i = 0; i < 250 && sys_rmdir(a_.cgroup) == -EBUSY; ++i) {
        sleep_ms(kGroupPollInterval.count());
      }
    }
  }

 private:
  GUARDIAN_CODE void begin_stopping(std::int64_t kill_at) {
    signalled_ = true;
    // Told before the job can die of it; to a dead rlock it goes nowhere.
    GuardianMessage m{kGuardianStopping, 0, 0};
    sys(SYS_sendto, kGuardianFd, reinterpret_cast<long>(&m), sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT,
        0, 0);
    kill_at_ = kill_at;
    if (valid_ns_ != kNever && valid_ns_ - a_.margin_ns < kill_at_)
      kill_at_ = valid_ns_ - a_.margin_ns;
    signal(a_.signo);
    if (a_.signo != SIGKILL && a_.signo != SIGCONT)
      signal(SIGCONT);  // a stopped job can't act on it
    if (a_.signo == SIGKILL) killed_ = true;
  }

  GUARDIAN_CODE void signal(int signo) {
    sys_kill(-pgid_, signo);
    if (a_.cgroup[0] == '\0') return;
    if (signo == SIGKILL) {
      cg_write(a_.cgroup, "cgroup.kill", "1");
    } else {
      cg_signal(a_.cgroup, signo);
    }
  }

  GUARDIAN_CODE bool alive() const {
    return pgroup_alive(pgid_) || (a_.cgroup[0] != '\0' && cg_populated(a_.cgroup));
  }

  const GuardianArgs& a_;
  pid_t pgid_ = 0;
  std::int64_t valid_ns_ = kNever;
  std::int64_t kill_at_ = kNever;
  bool signalled_ = false;
  bool killed_ = false;
};

// Arms `timer` to fire at `at_ns` (boot clock as now_ns() reads it) with a relative time:
// an absolute one is what time-faking preloads rewrite, into a time the kernel refuses.
// False when it could not be armed.
GUARDIAN_CODE bool arm(int timer, std::int64_t at_ns) {
  itimerspec spec{};
  if (at_ns != kNever) {
    std::int64_t in_ns = at_ns - now_ns();
    if (in_ns < 1) in_ns = 1;  // 0 would disarm it
    spec.it_value = {static_cast<time_t>(in_ns / 1'000'000'000),
                     static_cast<long>(in_ns % 1'000'000'000)};
  }
  return sys(SYS_timerfd_settime, timer, 0, reinterpret_cast<long>(&spec), 0) == 0;
}

constexpr int kIgnored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};

// How much CPU time the guardian may use between two sleeps under a real-time policy before
// the kernel stops it (RLIMIT_RTTIME, in microseconds): a guardian that spun would take a
// CPU from everything of lower priority. It sleeps in ppoll between steps, and a step is a
// few system calls.
constexpr long kRealTimeBudgetUs = 500'000;

// The stop point holds only if the guardian runs when its timer fires, however busy the
// machine: a task of normal priority among CPU-bound ones of higher weight (nice -20, or
// just many) waits for its turn for seconds under the kernel's fair scheduler (EEVDF gives
// a light task a late virtual deadline). Where allowed (root, CAP_SYS_NICE, an RLIMIT_RTPRIO)
// it takes the lowest real-time priority, which runs before every normal task; else the
// highest nice it may. Its code and stack are locked in memory where RLIMIT_MEMLOCK allows
// (a few pages), so that memory pressure does not page out what it needs to act.
// Each may fail; none is needed for correctness on an idle machine.
GUARDIAN_CODE void raise_priority(void* stack, size_t stack_size) {
  rlimit rt{kRealTimeBudgetUs, kRealTimeBudgetUs};
  sched_param param{};
  param.sched_priority = 1;
  if (sys(SYS_prlimit64, 0, RLIMIT_RTTIME, reinterpret_cast<long>(&rt), 0) != 0 ||
      sys(SYS_sched_setscheduler, 0, SCHED_FIFO, reinterpret_cast<long>(&param)) != 0) {
    sys(SYS_setpriority, PRIO_PROCESS, 0, -20);
  }
  // (The kernel rounds the range out to whole pages.)
  sys(SYS_mlock, reinterpret_cast<long>(__start_rlock_guardian_text),
      __stop_rlock_guardian_text - __start_rlock_guardian_text);
  sys(SYS_mlock, reinterpret_cast<long>(stack), static_cast<long>(stack_size));
}

// Runs in a process that shares rlock's memory (CLONE_VM) but has its own descriptor table
// and signal dispositions. It touches nothing of rlock's but its own stack; what may fail
// goes through sys() (see above), the rest are calls that succeed, which leave errno alone.
GUARDIAN_CODE int guardian_entry(void* raw) {
  GuardianArgs a = *static_cast<GuardianArgs*>(raw);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  for (int s : kIgnored) sigaction(s, &ign, nullptr);
  setpgid(0, 0);
  raise_priority(raw, kGuardianStack);
  close(a.rlock_end);
  if (a.life_fd != kGuardianFd) dup2(a.life_fd, kGuardianFd);
  if (a.close_range_ok) syscall(SYS_close_range, kGuardianFd + 1u, ~0u, 0u);  // no Redis socket
  // Without a timerfd (it may fail), the guardian checks its deadline every poll interval.
  int timer = static_cast<int>(sys(SYS_timerfd_create, CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK));
  GuardedJob job(a);
  for (;;) {
    std::int64_t next = job.next_step();
    // A timer that cannot be armed counts as none: the deadline is checked every interval.
    bool timed = timer >= 0 && arm(timer, next);
    pollfd p[2] = {{kGuardianFd, POLLIN, 0}, {timer, POLLIN, 0}};
    timespec poll_interval{0, kGroupPollInterval.count() * kNsPerMs};  // without a timerfd
    long n = sys(SYS_ppoll, reinterpret_cast<long>(p), timed ? 2 : 1,
                 reinterpret_cast<long>(timed || next == kNever ? nullptr : &poll_interval), 0, 8);
    if (n < 0) continue;
    // Messages first: a deadline that rlock moved just now must count before the old one.
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (next != kNever && now_ns() >= next) job.step();
      continue;
    }
    GuardianMessage m{};
    long r = sys(SYS_recvfrom, kGuardianFd, reinterpret_cast<long>(&m), sizeof m, 0, 0, 0);
    if (r == -EINTR || r == -EAGAIN) continue;
    if (r != static_cast<long>(sizeof m)) {  // rlock died (or a message makes no sense)
      job.stop_now();
      return 0;
    }
    if (m.kind == kGuardianDone) return 0;
    if (m.kind == kGuardianJob) job.started_as(m.pid);
    if (m.kind == kGuardianJob || m.kind == kGuardianValidUntil) job.valid_until(m.boot_ns);
  }
}

// The stacks of the guardians this process started (rlock's main thread only). A
// guardian told to finish leaves with rlock's end of its socket kept open: its own end
// closes when it exits (hang-up), and then its stack, which it shared (CLONE_VM), can be
// unmapped. That is done when the next guardian starts, so that a --forever consumer,
// which starts one per item, stays bounded.
struct GuardianStack {
  pid_t pid;
  void* stack;
  Fd life;  // rlock's end, once the guardian was told to finish
};
std::vector<GuardianStack>& guardian_stacks() {
  static std::vector<GuardianStack> stacks;
  return stacks;
}

void unmap_exited_guardians() {
  std::erase_if(guardian_stacks(), [](const GuardianStack& g) {
    if (g.life.get() < 0) return false;
    pollfd p{g.life.get(), 0, 0};
    if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLHUP | POLLERR))) return false;
    munmap(g.stack, kGuardianStack);
    return true;
  });
}

}  // namespace

bool group_alive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno == EPERM; }

Guardian Guardian::start(int signo, Millis kill_after, Millis margin,
                         const std::string& cgroup_dir) {
  // A socket pair rather than a pipe: send(MSG_NOSIGNAL) to a guardian that is gone fails
  // with EPIPE instead of killing rlock or the job with SIGPIPE. SEQPACKET keeps messages whole.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(71, std::string("socketpair: ") + std::strerror(errno));
  }
  Fd life_r(fds[0]), life_w(fds[1]);
  // clone(CLONE_VM) rather than fork: a fork would make every page rlock writes afterwards
  // a copy-on-write fault (about 0.4 ms per exec here), and an exec would cost a start-up.
  // The stack is unmapped only once the guardian has exited (see guardian_stacks): it may
  // outlive rlock.
  unmap_exited_guardians();
  void* stack = mmap(nullptr, kGuardianStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) throw Error(71, std::string("mmap: ") + std::strerror(errno));
  auto* args = static_cast<GuardianArgs*>(stack);
  *args = {life_r.get(),
           life_w.get(),
           signo,
           std::int64_t{kill_after.count()} * kNsPerMs,
           std::int64_t{margin.count()} * kNsPerMs,
           syscall(SYS_close_range, ~0u - 1, ~0u, 0u) == 0,
           {}};
  if (cgroup_dir.size() < kPathMax)
    std::memcpy(args->cgroup, cgroup_dir.c_str(), cgroup_dir.size() + 1);
  pid_t pid =
      clone(guardian_entry, static_cast<char*>(stack) + kGuardianStack, CLONE_VM | SIGCHLD, args);
  if (pid < 0) {
    munmap(stack, kGuardianStack);
    throw Error(71, std::string("clone: ") + std::strerror(errno));
  }
  guardian_stacks().push_back({pid, stack, Fd()});
  setpgid(pid, pid);  // also done by the guardian: whichever runs first
  Guardian g;
  g.pid_ = pid;
  g.life_ = std::move(life_w);
  return g;
}

int Guardian::valid_until(Deadline t) {
  if (life_.get() < 0) return EBADF;
  GuardianMessage m{kGuardianValidUntil, 0, t.time_since_epoch().count()};
  while (send(life_.get(), &m, sizeof m, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof m)) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

Guardian::News Guardian::news() {
  if (life_.get() < 0) return News::kNone;
  News news = News::kNone;
  GuardianMessage m{};
  while (true) {
    ssize_t r = recv(life_.get(), &m, sizeof m, MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return news;
    if (r != static_cast<ssize_t>(sizeof m)) return News::kGone;  // exited, or nonsense
    if (m.kind == kGuardianStopping) news = News::kStopping;
  }
}

void Guardian::finish() {
  if (life_.get() < 0) return;
  GuardianMessage m{kGuardianDone, 0, 0};
  (void)!send(life_.get(), &m, sizeof m, MSG_NOSIGNAL);
  for (auto& g : guardian_stacks()) {
    if (g.pid == pid_ && g.life.get() < 0) g.life = std::move(life_);
  }
  life_.reset();
}

}  // namespace rlock::exec
