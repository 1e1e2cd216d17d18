#include "cli/wakeups.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.hpp"

namespace rlock::cli {

Wakeups::Wakeups() : fd_(epoll_create1(EPOLL_CLOEXEC)) {
  if (fd_ < 0) throw Error(kExitInternal, std::string("epoll_create1: ") + std::strerror(errno));
}

Wakeups::~Wakeups() { close(fd_); }

bool Wakeups::add(int fd, bool readable) {
  epoll_event e{};
  e.events = readable ? uint32_t{EPOLLIN} : 0u;  // EPOLLERR and EPOLLHUP are always reported
  e.data.fd = fd;
  return epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &e) == 0;
}

void Wakeups::remove(int fd) { epoll_ctl(fd_, EPOLL_CTL_DEL, fd, nullptr); }

}  // namespace rlock::cli
