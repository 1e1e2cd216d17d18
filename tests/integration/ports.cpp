// free_port and listen_silently.
#include "ports.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include "harness_internal.hpp"

namespace rlock::test {

using detail::throw_errno;

namespace {
Fd bind_loopback(int* port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw_errno("bind");
  socklen_t len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw_errno("getsockname");
  *port = ntohs(addr.sin_port);
  return fd;
}
}  // namespace

int free_port() {
  int port = 0;
  bind_loopback(&port);
  return port;
}

Fd listen_silently(int* port) {
  Fd fd = bind_loopback(port);
  if (::listen(fd.get(), 64) != 0) throw_errno("listen");
  return fd;
}

}  // namespace rlock::test
