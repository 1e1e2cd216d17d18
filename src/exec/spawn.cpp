#include "exec/spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "exec/fd.hpp"
#include "exec/guardian.hpp"
#include "exec/signals.hpp"
#include "util/error.hpp"

extern char** environ;

namespace rlock::exec {
namespace {

bool in_terminal_foreground() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

// Everything the vfork child needs, prepared by the parent: the child may only make
// async-signal-safe calls and must not allocate.
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  int announce_fd = -1;
  std::int64_t valid_until_ns = 0;
  int procs_fd = -1;  // cgroup.procs when the child must move itself into the cgroup
  bool take_terminal = false;
  const sigset_t* mask = nullptr;
  bool default_sigpipe = false;  // rlock ignores SIGPIPE; the job gets its default back
  sigset_t with_ttou{};
  int exec_errno = 0;               // written by the child (shared memory under vfork)
  int announce_errno = 0;           // by the child: the guardian could not be told of the job
  int cgroup_errno = -1;            // by the child: 0 once it moved itself into the cgroup
  const cpu_set_t* cpus = nullptr;  // the affinity the child gives back to itself, if pinned
  int cpus_errno = 0;               // by the child: why it could not
};

std::vector<std::string> merged_environment(const JobSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& name : spec.unset) {
      replaced = replaced || (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
                              entry[name.size()] == '=');
    }
    for (const auto& kv : spec.env) {
      replaced = replaced ||
                 (entry.size() > kv.first.size() && entry.substr(0, kv.first.size()) == kv.first &&
                  entry[kv.first.size()] == '=');
    }
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  return env;
}

// The child runs on a stack of its own (clone3) that AddressSanitizer does not know: left
// uninstrumented, so that a sanitizer build does not warn on its way to exec.
#define RLOCK_ON_FOREIGN_STACK __attribute__((no_sanitize("address")))

[[noreturn]] RLOCK_ON_FOREIGN_STACK void child_main(ChildPlan* plan) {
  if (plan->cpus && sched_setaffinity(0, sizeof(cpu_set_t), plan->cpus) != 0)
    plan->cpus_errno = errno;
  // "0" moves the writing process; a failure leaves the job to the process-group fallback.
  if (plan->procs_fd >= 0) plan->cgroup_errno = write(plan->procs_fd, "0", 1) == 1 ? 0 : errno;
  setpgid(0, 0);
  if (plan->take_terminal) {
    sigprocmask(SIG_BLOCK, &plan->with_ttou, nullptr);  // a background tcsetpgrp would stop us
    tcsetpgrp(STDIN_FILENO, getpid());
  }
  GuardianMessage announce{kGuardianJob, getpid(), plan->valid_until_ns};
  // A job the guardian does not know of would have no backstop: it does not start.
  while (send(plan->announce_fd, &announce, sizeof announce, MSG_NOSIGNAL) !=
         static_cast<ssize_t>(sizeof announce)) {
    if (errno == EINTR) continue;
    plan->announce_errno = errno;
    _exit(127);
  }
  if (plan->default_sigpipe) {
    // The child has its own dispositions (no CLONE_SIGHAND): rlock keeps ignoring.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);
  }
  if (plan->mask) sigprocmask(SIG_SETMASK, plan->mask, nullptr);
  execvpe(plan->argv[0], plan->argv.data(), plan->envp.data());
  plan->exec_errno = errno;
  _exit(127);
}

// Kept apart so that no local of the caller lives across vfork's second return.
pid_t vfork_child(ChildPlan* plan) {
  pid_t pid = vfork();
  if (pid == 0) child_main(plan);
  return pid;
}

RLOCK_ON_FOREIGN_STACK int child_entry(void* plan) { child_main(static_cast<ChildPlan*>(plan)); }

// struct clone_args of clone3(2) (glibc 2.36 has no wrapper).
struct CloneArgs {
  std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
      set_tid_size, cgroup;
};
constexpr std::uint64_t kCloneIntoCgroup = 0x200000000ULL;
constexpr size_t kChildStack = 64 * 1024;

#if defined(__x86_64__)
// clone3 with a function to run on the child's stack, as glibc's internal __clone3 does:
// returns the child's pid or -errno in the parent; the child calls fn(arg) and exits.
extern "C" long rlock_clone3(CloneArgs* args, size_t size, int (*fn)(void*), void* arg);
asm(R"(
  .text
  .globl rlock_clone3
  .type rlock_clone3, @function
rlock_clone3:
  mov %rdx, %r9
  mov %rcx, %r8
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  xor %ebp, %ebp
  mov %r8, %rdi
  call *%r9
  mov %eax, %edi
  mov $60, %eax
  syscall
  hlt
  .size rlock_clone3, .-rlock_clone3
)");

// Starts the child as vfork does (shared memory, rlock suspended until it execs or exits),
// born in the cgroup `dir_fd` (CLONE_INTO_CGROUP): unlike a write to cgroup.procs, which
// can wait for an RCU grace period (several ms), this costs what a vfork costs. The child
// runs on a stack of its own: execvp may put a copy of argv on it (a script without #!).
long clone_into_cgroup(ChildPlan* plan, int dir_fd) {
  size_t size = kChildStack + 2 * sizeof(char*) * plan->argv.size();
  size = (size + 15) & ~size_t{15};
  auto stack = std::make_unique_for_overwrite<char[]>(size);  // 16-byte aligned
  CloneArgs args{};
  args.flags = CLONE_VM | CLONE_VFORK | kCloneIntoCgroup;
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<std::uint64_t>(stack.get());
  args.stack_size = size;
  args.cgroup = static_cast<std::uint64_t>(dir_fd);
  return rlock_clone3(&args, sizeof args, child_entry, plan);
}
#else
long clone_into_cgroup(ChildPlan*, int) { return -ENOSYS; }
#endif

// While alive, rlock may run only on the CPU it is on, and so may the child it starts, which
// gives itself the whole affinity back first thing. Why: a new child goes to an idle CPU when
// there is one, and waking an idle CPU took 50 to 100 us of a hand-off on a VM (`perf record`
// of sched events), while the CPU rlock is on is free: rlock sleeps until the child execs.
class StartHere {
 public:
  explicit StartHere(ChildPlan& plan) {
    int cpu = sched_getcpu();
    if (cpu < 0 || sched_getaffinity(0, sizeof all_, &all_) != 0) return;
    cpu_set_t here;
    CPU_ZERO(&here);
    CPU_SET(cpu, &here);
    if (sched_setaffinity(0, sizeof here, &here) == 0) plan.cpus = &all_;
    plan_ = &plan;
  }
  ~StartHere() {
    if (plan_ && plan_->cpus) sched_setaffinity(0, sizeof all_, &all_);
  }
  StartHere(const StartHere&) = delete;
  StartHere& operator=(const StartHere&) = delete;

  // A child that could not widen its affinity gets it from rlock.
  void check_child(pid_t pid) const {
    if (plan_ && plan_->cpus && plan_->cpus_errno != 0) sched_setaffinity(pid, sizeof all_, &all_);
  }

 private:
  ChildPlan* plan_ = nullptr;
  cpu_set_t all_{};
};

Error exec_error(const std::string& cmd, int e) {
  bool not_found = e == ENOENT || e == ENOTDIR;
  return Error(not_found ? 127 : 126, "cannot run '" + cmd + "': " + std::strerror(e) +
                                          (not_found ? " (command not found)" : ""));
}

}  // namespace

Job start_job(const JobSpec& spec, int announce_fd) {
  std::vector<std::string> env = merged_environment(spec);
  ChildPlan plan;
  for (const auto& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (auto& e : env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.announce_fd = announce_fd;
  plan.valid_until_ns = spec.valid_until_ns;

  plan.take_terminal = in_terminal_foreground();
  plan.mask = spec.signal_mask;
  plan.default_sigpipe = sigpipe_was_default();
  sigemptyset(&plan.with_ttou);
  sigaddset(&plan.with_ttou, SIGTTOU);

  Job job;
  job.took_terminal = plan.take_terminal;
  StartHere here(plan);
  Fd procs;
  if (spec.cgroup_dir_fd >= 0) {
    long r = clone_into_cgroup(&plan, spec.cgroup_dir_fd);
    job.pid = r > 0 ? static_cast<pid_t>(r) : -1;
    job.in_cgroup = r > 0;
    if (r < 0) {  // no clone3 (old kernel, seccomp): the child moves itself, more slowly
      procs = Fd(openat(spec.cgroup_dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC));
      plan.procs_fd = procs.get();
      job.cgroup_errno = procs.get() < 0 ? errno : 0;
    }
  }
  if (job.pid < 0) {
    job.pid = vfork_child(&plan);
    if (job.pid < 0) throw Error(71, std::string("vfork: ") + std::strerror(errno));
    if (plan.procs_fd >= 0) {
      job.in_cgroup = plan.cgroup_errno == 0;
      job.cgroup_errno = plan.cgroup_errno > 0 ? plan.cgroup_errno : 0;
    }
  }
  here.check_child(job.pid);
  if (plan.announce_errno != 0) {
    waitpid(job.pid, nullptr, 0);
    restore_terminal(job);
    throw Error(71, std::string("cannot tell the guardian about the job: ") +
                        std::strerror(plan.announce_errno));
  }
  if (plan.exec_errno != 0) {  // the child has exited (vfork resumes us after exec or _exit)
    waitpid(job.pid, nullptr, 0);
    restore_terminal(job);
    throw exec_error(spec.argv.front(), plan.exec_errno);
  }
  return job;
}

void restore_terminal(const Job& job) {
  // Only from the job: after a `bg`, the terminal belongs to the shell.
  if (!job.took_terminal || tcgetpgrp(STDIN_FILENO) != job.pid) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, getpgrp());
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace rlock::exec
