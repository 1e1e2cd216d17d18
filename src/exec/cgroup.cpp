#include "exec/cgroup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "exec/cgroup_events.hpp"

namespace rlock::exec {
namespace {

// Mount point of the cgroup2 (unified) hierarchy from /proc/self/mountinfo: /sys/fs/cgroup
// on a pure v2 system, /sys/fs/cgroup/unified on a hybrid one; empty if there is none.
std::string unified_mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount-point options [optional...] - fstype source super
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, dev, root, mount;
    head >> id >> parent >> dev >> root >> mount;
    if (root == "/") return mount;
  }
  return {};
}

// rlock's own cgroup in the unified hierarchy: the path of the "0::" line.
std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

bool write_text(const std::string& path, const char* text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text, std::strlen(text)) == static_cast<ssize_t>(std::strlen(text));
  close(fd);
  return ok;
}

}  // namespace

std::optional<JobCgroup> JobCgroup::create(std::string* why) {
  if (const char* v = std::getenv("RLOCK_CGROUP"); v != nullptr && std::strcmp(v, "off") == 0) {
    *why = "RLOCK_CGROUP=off";
    return std::nullopt;
  }
  std::string mount = unified_mount();
  std::string own = own_cgroup();
  if (mount.empty() || own.empty()) {
    *why = "no cgroup2 hierarchy";
    return std::nullopt;
  }
  if (own.find("/..") != std::string::npos || own.find(" (deleted)") != std::string::npos) {
    *why = "rlock's cgroup is outside its view";
    return std::nullopt;
  }
  if (own.back() != '/') own += '/';
  std::string dir = mount + own + "rlock." + std::to_string(getpid());
  if (dir.size() + sizeof "/cgroup.events" > kMaxCgroupPath) {  // the guardian's buffers
    *why = "rlock's cgroup path is too long";
    return std::nullopt;
  }
  if (mkdir(dir.c_str(), 0755) != 0 &&
      !(errno == EEXIST && rmdir(dir.c_str()) == 0 && mkdir(dir.c_str(), 0755) == 0)) {
    *why = "cannot create " + dir + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (access((dir + "/cgroup.kill").c_str(), W_OK) != 0) {  // kernels before 5.14
    *why = "no cgroup.kill in " + dir;
    rmdir(dir.c_str());
    return std::nullopt;
  }
  return JobCgroup(std::move(dir));
}

JobCgroup::JobCgroup(std::string dir)
    : dir_(std::move(dir)),
      dir_fd_(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
      events_fd_(dir_fd_ < 0 ? -1 : openat(dir_fd_, "cgroup.events", O_RDONLY | O_CLOEXEC)) {}

// Read again through a descriptor opened with the cgroup: it is on the path from the job's
// exit to the release.
bool JobCgroup::populated() const {
  char buf[256];
  ssize_t n = -1;
  if (events_fd_ >= 0) {
    n = pread(events_fd_, buf, sizeof buf, 0);
  } else {
    int fd = open((dir_ + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    n = read(fd, buf, sizeof buf);
    close(fd);
  }
  return n > 0 && events_say_populated(buf, n);
}

void JobCgroup::signal(int signo) const {
  if (signo == SIGKILL) {
    write_text(dir_ + "/cgroup.kill", "1");
    return;
  }
  for (pid_t pid : pids()) kill(pid, signo);
}

std::vector<pid_t> JobCgroup::pids() const {
  std::ifstream in(dir_ + "/cgroup.procs");
  std::vector<pid_t> out;
  pid_t pid;
  while (in >> pid) out.push_back(pid);
  return out;
}

bool JobCgroup::remove() {
  for (int* fd : {&events_fd_, &dir_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  if (dir_.empty()) return false;
  if (rmdir(dir_.c_str()) != 0 && errno != ENOENT) return false;
  dir_.clear();
  return true;
}

}  // namespace rlock::exec
