#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace rlock::exec {

// The longest path below a job's cgroup that the guardian can handle (its own buffers).
inline constexpr size_t kMaxCgroupPath = 512;

// A cgroup v2 of the job's own, created as a child of rlock's cgroup in the unified
// hierarchy. Every process the job starts stays in it (setsid or double-fork included),
// `cgroup.kill` stops all of them at once, and `cgroup.events` says when none is left.
// Removed (rmdir) by the destructor once empty. Move-only.
class JobCgroup {
 public:
  // Creates one, or returns nullopt with the reason in `why` (no cgroup2 mount, no
  // permission, RLOCK_CGROUP=off in the environment).
  static std::optional<JobCgroup> create(std::string* why);

  JobCgroup(JobCgroup&& o) noexcept
      : dir_(std::move(o.dir_)), dir_fd_(o.dir_fd_), events_fd_(o.events_fd_) {
    o.dir_.clear();
    o.dir_fd_ = -1;
    o.events_fd_ = -1;
  }
  JobCgroup& operator=(JobCgroup&&) = delete;
  ~JobCgroup() { remove(); }

  // The cgroup's directory, e.g. /sys/fs/cgroup/unified/rlock.1234.
  const std::string& dir() const { return dir_; }
  // The cgroup's directory, open (close-on-exec) since create() for
  // clone3(CLONE_INTO_CGROUP), so that opening it is not on the way to the job's start;
  // -1 if it could not be opened.
  int dir_fd() const { return dir_fd_; }
  // True while any process is in the cgroup (cgroup.events "populated 1").
  bool populated() const;
  // The processes in it now.
  std::vector<pid_t> pids() const;
  // Sends `signo` to every process in it; SIGKILL goes through cgroup.kill.
  void signal(int signo) const;
  // Removes the (empty) cgroup; false while processes remain or it is already gone.
  bool remove();

 private:
  explicit JobCgroup(std::string dir);
  std::string dir_;
  int dir_fd_ = -1;
  int events_fd_ = -1;  // cgroup.events, read again from offset 0 by populated()
};

}  // namespace rlock::exec
