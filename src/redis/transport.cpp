#include "redis/transport.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "redis/openssl_api.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// Owns a socket until it is handed to a Transport.
class SocketFd {
 public:
  explicit SocketFd(int fd = -1) : fd_(fd) {}
  ~SocketFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  SocketFd(SocketFd&& other) noexcept : fd_(other.release()) {}
  SocketFd& operator=(SocketFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Why connecting failed, before the caller adds where to.
struct ConnectFailure {
  std::string why;
  bool timed_out = false;
};

// Waits until `fd` has `events` or `until` passes; false at the deadline.
bool wait_for(int fd, short events, Deadline until) {
  while (true) {
    pollfd p{fd, events, 0};
    long long left = std::max<long long>(millis_until(until).count(), 0);
    int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Non-blocking connect of a fresh socket to `addr`, finished by `until`.
SocketFd connect_one(int family, const sockaddr* addr, socklen_t len, Deadline until) {
  SocketFd s(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.get() < 0) throw ConnectFailure{std::strerror(errno)};
  if (::connect(s.get(), addr, len) != 0) {
    if (errno != EINPROGRESS) throw ConnectFailure{std::strerror(errno)};
    if (!wait_for(s.get(), POLLOUT, until)) throw ConnectFailure{"", true};
    int err = 0;
    socklen_t err_len = sizeof err;
    ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &err_len);
    if (err != 0) throw ConnectFailure{std::strerror(err)};
  }
  if (family != AF_UNIX) {
    int one = 1;  // requests are small and answered at once: no Nagle delay
    ::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return s;
}

SocketFd connect_unix(const std::string& path, Deadline until) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) throw ConnectFailure{"socket path too long"};
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  return connect_one(AF_UNIX, reinterpret_cast<const sockaddr*>(&sa), sizeof sa, until);
}

// Each address of `host` in turn (as getaddrinfo orders them) until one accepts.
SocketFd connect_tcp(const std::string& host, int port, Deadline until) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) throw ConnectFailure{::gai_strerror(rc)};
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, ::freeaddrinfo);
  ConnectFailure last{"no address"};
  for (addrinfo* a = found; a; a = a->ai_next) {
    try {
      return connect_one(a->ai_family, a->ai_addr, a->ai_addrlen, until);
    } catch (const ConnectFailure& f) {
      last = f;
      if (f.timed_out) break;
    }
  }
  throw last;
}

class PlainTransport : public Transport {
 public:
  explicit PlainTransport(int fd) : Transport(fd) {}
  ~PlainTransport() override { ::close(fd()); }

  // MSG_NOSIGNAL: a server that closed the connection fails the write with EPIPE.
  IoStatus write_some(const char* data, size_t size) override {
    ssize_t n = ::send(fd(), data, size, MSG_NOSIGNAL);
    if (n >= 0) return {IoStatus::kDone, static_cast<size_t>(n), {}};
    return failure(errno, IoStatus::kWantWrite);
  }

  IoStatus read_some(char* buffer, size_t size) override {
    ssize_t n = ::recv(fd(), buffer, size, 0);
    if (n > 0) return {IoStatus::kDone, static_cast<size_t>(n), {}};
    return n == 0 ? IoStatus{IoStatus::kClosed, 0, {}} : failure(errno, IoStatus::kWantRead);
  }

 private:
  static IoStatus failure(int err, IoStatus::Kind want) {
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) return {want, 0, {}};
    return {IoStatus::kFailed, 0, std::strerror(err)};
  }
};

// The reason OpenSSL recorded last, with what to check for the common ones.
std::string tls_reason() {
  unsigned long e = openssl().ERR_peek_last_error();
  const char* reason = e ? openssl().ERR_reason_error_string(e) : nullptr;
  openssl().ERR_clear_error();
  std::string why = reason ? reason : "TLS error";
  if (why.find("certificate required") != std::string::npos)
    why += " (the server demands a client certificate: --tls-cert, --tls-key)";
  else if (why.find("unknown ca") != std::string::npos ||
           why.find("bad certificate") != std::string::npos)
    why += " (the server does not accept the client certificate --tls-cert)";
  else if (why.find("wrong version number") != std::string::npos ||
           why.find("packet length too long") != std::string::npos)
    why += " (does the server speak TLS on this port?)";
  return why;
}

class TlsTransport : public Transport {
 public:
  TlsTransport(int fd, SSL* ssl) : Transport(fd), ssl_(ssl) {
    openssl().SSL_set_ex_data(ssl, 0, &notes_);
  }
  ~TlsTransport() override {
    openssl().SSL_free(ssl_);
    ::close(fd());
  }

  IoStatus write_some(const char* data, size_t size) override {
    openssl().ERR_clear_error();
    int n = openssl().SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    return n > 0 ? IoStatus{IoStatus::kDone, static_cast<size_t>(n), {}} : failure(n);
  }

  IoStatus read_some(char* buffer, size_t size) override {
    openssl().ERR_clear_error();
    int n = openssl().SSL_read(ssl_, buffer, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n <= 0) return failure(n);
    answered_ = true;
    return {IoStatus::kDone, static_cast<size_t>(n), {}};
  }

  bool buffered() const override { return openssl().SSL_pending(ssl_) > 0; }

  std::optional<std::chrono::system_clock::time_point> peer_certificate_expiry() const override {
    X509* cert = openssl().SSL_get0_peer_certificate(ssl_);
    std::tm when{};
    if (!cert || openssl().ASN1_TIME_to_tm(openssl().X509_get0_notAfter(cert), &when) != 1)
      return std::nullopt;
    return std::chrono::system_clock::from_time_t(::timegm(&when));
  }

  // One step of the handshake (see read_some for the status).
  IoStatus handshake() {
    openssl().ERR_clear_error();
    int rc = openssl().SSL_connect(ssl_);
    return rc == 1 ? IoStatus{IoStatus::kDone, 0, {}} : failure(rc);
  }

  SSL* ssl() const { return ssl_; }

 private:
  IoStatus failure(int rc) {
    IoStatus st = classify(rc);
    // TLS 1.3 ends the client's handshake before the server has checked the client's
    // certificate: a server that demands one drops the connection under the first request,
    // with an alert or (its unread request discarded) a reset.
    if (notes_.asked_for_certificate && !answered_ &&
        (st.kind == IoStatus::kFailed || st.kind == IoStatus::kClosed)) {
      return {IoStatus::kFailed, 0,
              "the server asked for a client certificate and ended the connection without "
              "one (certificate required: give --tls-cert and --tls-key)"};
    }
    return st;
  }

  IoStatus classify(int rc) {
    int saved_errno = errno;
    switch (openssl().SSL_get_error(ssl_, rc)) {
      case SSL_ERROR_WANT_READ:
        return {IoStatus::kWantRead, 0, {}};
      case SSL_ERROR_WANT_WRITE:
        return {IoStatus::kWantWrite, 0, {}};
      case SSL_ERROR_ZERO_RETURN:
        return {IoStatus::kClosed, 0, {}};
      case SSL_ERROR_SYSCALL:
        if (openssl().ERR_peek_last_error() == 0) {
          if (saved_errno == EAGAIN || saved_errno == EINTR) return {IoStatus::kWantRead, 0, {}};
          if (rc == 0 || saved_errno == 0) return {IoStatus::kClosed, 0, {}};
          return {IoStatus::kFailed, 0, std::strerror(saved_errno)};
        }
        return {IoStatus::kFailed, 0, tls_reason()};
      default:
        return {IoStatus::kFailed, 0, tls_reason()};
    }
  }

  SSL* ssl_;
  TlsSessionNotes notes_;
  bool answered_ = false;  // a read returned data: the server accepted the handshake
};

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Which name the server's certificate must carry: a DNS name (also sent as SNI) or, for an
// IP literal, an IP address SAN.
void expect_name(SSL* ssl, const std::string& host, bool verify) {
  if (!is_ip_literal(host)) {
    openssl().SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                       const_cast<char*>(host.c_str()));
  }
  if (!verify) return;
  if (is_ip_literal(host)) {
    openssl().X509_VERIFY_PARAM_set1_ip_asc(openssl().SSL_get0_param(ssl), host.c_str());
  } else {
    openssl().SSL_set1_host(ssl, host.c_str());
  }
}

// What to check for a certificate that did not verify.
std::string verify_hint(long result) {
  switch (result) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return " (the certificate names another server than the URL's host)";
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return " (the server's certificate is outside its validity period)";
    default:
      return " (trusted CAs: --tls-ca-cert or --tls-ca-dir, else the system's)";
  }
}

std::unique_ptr<Transport> handshake(SocketFd socket, const Endpoint& ep, const TlsContext& tls,
                                     Deadline until) {
  std::string where = ep.describe();
  SSL* ssl = openssl().SSL_new(tls.get());
  if (!ssl) throw UnavailableError("cannot set up TLS for redis at " + where);
  openssl().SSL_set_fd(ssl, socket.get());
  auto transport = std::make_unique<TlsTransport>(socket.release(), ssl);
  expect_name(ssl, ep.host, tls.verify());
  while (true) {
    IoStatus st = transport->handshake();
    if (st.kind == IoStatus::kDone) return transport;
    if (st.kind == IoStatus::kWantRead || st.kind == IoStatus::kWantWrite) {
      short events = st.kind == IoStatus::kWantRead ? POLLIN : POLLOUT;
      if (wait_for(transport->fd(), events, until)) continue;
      throw UnavailableError("TLS handshake with redis at " + where +
                             " did not finish in time (--connect-timeout; does the server speak "
                             "TLS on this port?)");
    }
    long verified = openssl().SSL_get_verify_result(ssl);
    if (tls.verify() && verified != X509_V_OK) {
      throw UnavailableError("the TLS certificate of redis at " + where + " does not verify: " +
                             openssl().X509_verify_cert_error_string(verified) +
                             verify_hint(verified));
    }
    std::string why = st.kind == IoStatus::kClosed ? "the server closed the connection" : st.why;
    throw UnavailableError("TLS handshake with redis at " + where + " failed: " + why);
  }
}

}  // namespace

Transport::~Transport() = default;

std::unique_ptr<Transport> Transport::open(const Endpoint& ep,
                                           const std::shared_ptr<const TlsContext>& tls,
                                           Millis timeout) {
  Deadline until = SteadyClock::now() + timeout;
  SocketFd socket;
  try {
    socket = ep.kind == Endpoint::Kind::kUnix ? connect_unix(ep.path, until)
                                              : connect_tcp(ep.host, ep.port, until);
  } catch (const ConnectFailure& f) {
    std::string what = f.timed_out ? "timed out after " + format_duration(timeout) : f.why;
    throw UnavailableError("cannot connect to redis at " + ep.describe() + ": " + what +
                           " (is redis-server running there? set --url or RLOCK_URL)");
  }
  if (!tls) return std::make_unique<PlainTransport>(socket.release());
  return handshake(std::move(socket), ep, *tls, until);
}

}  // namespace rlock::redis
