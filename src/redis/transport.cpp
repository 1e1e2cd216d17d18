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
#include <optional>
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

// One connection being opened, a step at a time, so that several open at once: the
// addresses of a host in turn (as getaddrinfo orders them), then the TLS handshake.
class Opening {
 public:
  Opening(const Endpoint& ep, std::shared_ptr<const TlsContext> tls, Millis timeout)
      : ep_(ep), tls_(std::move(tls)), timeout_(timeout) {
    try {
      if (ep.kind == Endpoint::Kind::kUnix) {
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        if (ep.path.size() >= sizeof sa.sun_path) {
          fail_connect("socket path too long");
          return;
        }
        std::memcpy(sa.sun_path, ep.path.c_str(), ep.path.size() + 1);
        unix_ = sa;
      } else {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        int rc = ::getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &found);
        if (rc != 0) {
          fail_connect(::gai_strerror(rc));
          return;
        }
        found_.reset(found);
        next_ = found;
      }
      try_next_address();
    } catch (const UnavailableError& e) {
      failure_ = e.what();
    }
  }

  bool pending() const { return !done_ && failure_.empty(); }
  bool opened() const { return done_; }
  pollfd poll_entry() const { return {fd(), events_, 0}; }

  // The socket is ready for what poll_entry() asked.
  void step() {
    try {
      if (tls_transport_) return handshake();
      int err = 0;
      socklen_t err_len = sizeof err;
      ::getsockopt(socket_.get(), SOL_SOCKET, SO_ERROR, &err, &err_len);
      if (err != 0) {
        last_ = std::strerror(err);
        return try_next_address();
      }
      connected();
    } catch (const UnavailableError& e) {
      failure_ = e.what();
    }
  }

  // Still pending after `waited`: why it failed.
  void give_up(Millis waited) {
    if (tls_transport_) {
      failure_ = "TLS handshake with redis at " + ep_.describe() +
                 " did not finish in time (--connect-timeout; does the server speak TLS on "
                 "this port?)";
    } else {
      failure_ = "cannot connect to redis at " + ep_.describe() + ": timed out after " +
                 format_duration(waited) + " (is redis-server running there? set --url or " +
                 "RLOCK_URL)";
    }
  }

  Transport::Opened take() {
    if (!done_) return {nullptr, failure_};
    if (tls_transport_) return {std::move(tls_transport_), {}};
    return {std::make_unique<PlainTransport>(socket_.release()), {}};
  }

  Millis timeout() const { return timeout_; }

 private:
  int fd() const { return tls_transport_ ? tls_transport_->fd() : socket_.get(); }

  void fail_connect(const std::string& why) {
    failure_ = "cannot connect to redis at " + ep_.describe() + ": " + why +
               " (is redis-server running there? set --url or RLOCK_URL)";
  }

  // A non-blocking connect to the next address; a refusal moves on to the one after.
  void try_next_address() {
    while (true) {
      int family = AF_UNIX;
      const sockaddr* addr = reinterpret_cast<const sockaddr*>(&unix_);
      socklen_t len = sizeof unix_;
      if (ep_.kind != Endpoint::Kind::kUnix) {
        if (!next_) return fail_connect(last_);
        family = next_->ai_family;
        addr = next_->ai_addr;
        len = next_->ai_addrlen;
        next_ = next_->ai_next;
      } else if (tried_unix_) {
        return fail_connect(last_);
      }
      tried_unix_ = true;
      socket_ = SocketFd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (socket_.get() < 0) return fail_connect(std::strerror(errno));
      if (family != AF_UNIX) {
        int one = 1;  // requests are small and answered at once: no Nagle delay
        ::setsockopt(socket_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
      if (::connect(socket_.get(), addr, len) == 0) return connected();
      if (errno == EINPROGRESS) {
        events_ = POLLOUT;
        return;
      }
      last_ = std::strerror(errno);
    }
  }

  void connected() {
    if (!tls_) {
      done_ = true;
      return;
    }
    SSL* ssl = openssl().SSL_new(tls_->get());
    if (!ssl) throw UnavailableError("cannot set up TLS for redis at " + ep_.describe());
    openssl().SSL_set_fd(ssl, socket_.get());
    tls_transport_ = std::make_unique<TlsTransport>(socket_.release(), ssl);
    expect_name(ssl, ep_.host, tls_->verify());
    handshake();
  }

  void handshake() {
    IoStatus st = tls_transport_->handshake();
    if (st.kind == IoStatus::kDone) {
      done_ = true;
      return;
    }
    if (st.kind == IoStatus::kWantRead || st.kind == IoStatus::kWantWrite) {
      events_ = st.kind == IoStatus::kWantRead ? POLLIN : POLLOUT;
      return;
    }
    const std::string where = ep_.describe();
    long verified = openssl().SSL_get_verify_result(tls_transport_->ssl());
    if (tls_->verify() && verified != X509_V_OK) {
      throw UnavailableError("the TLS certificate of redis at " + where + " does not verify: " +
                             openssl().X509_verify_cert_error_string(verified) +
                             verify_hint(verified));
    }
    std::string why = st.kind == IoStatus::kClosed ? "the server closed the connection" : st.why;
    throw UnavailableError("TLS handshake with redis at " + where + " failed: " + why);
  }

  Endpoint ep_;
  std::shared_ptr<const TlsContext> tls_;
  Millis timeout_;
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> found_{nullptr, ::freeaddrinfo};
  const addrinfo* next_ = nullptr;
  sockaddr_un unix_{};
  bool tried_unix_ = false;
  std::string last_ = "no address";
  SocketFd socket_;
  std::unique_ptr<TlsTransport> tls_transport_;
  short events_ = POLLOUT;
  bool done_ = false;
  std::string failure_;
};

}  // namespace

Transport::~Transport() = default;

void Transport::reset_on_close() const {
  linger reset{1, 0};
  (void)setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}

std::unique_ptr<Transport> Transport::open(const Endpoint& ep,
                                           const std::shared_ptr<const TlsContext>& tls,
                                           Millis timeout) {
  std::vector<Opened> one = open_each({{ep, tls, timeout}}, 1, timeout);
  if (!one[0].transport) throw UnavailableError(one[0].failure);
  return std::move(one[0].transport);
}

std::vector<Transport::Opened> Transport::open_each(const std::vector<ToOpen>& each, size_t needed,
                                                    Millis patience) {
  const Deadline start = SteadyClock::now();
  std::vector<Opening> opening;
  opening.reserve(each.size());
  for (const ToOpen& o : each) opening.emplace_back(o.endpoint, o.tls, o.timeout);
  std::vector<Millis> took(each.size(), Millis(0));
  std::optional<Deadline> rest_until;  // once `needed` opened: how long the others get
  while (true) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    size_t opened = 0;
    Deadline wake = Deadline::max();
    for (size_t i = 0; i < opening.size(); ++i) {
      opened += opening[i].opened();
      if (!opening[i].pending()) continue;
      Deadline own = start + opening[i].timeout();
      if (rest_until) own = std::min(own, *rest_until);
      if (SteadyClock::now() >= own) {
        const bool cut = own < start + opening[i].timeout();
        opening[i].give_up(cut ? std::chrono::duration_cast<Millis>(SteadyClock::now() - start)
                               : opening[i].timeout());
        continue;
      }
      wake = std::min(wake, own);
      fds.push_back(opening[i].poll_entry());
      which.push_back(i);
    }
    if (fds.empty()) break;
    if (opened >= needed && !rest_until) {
      rest_until = SteadyClock::now() +
                   std::max<SteadyClock::duration>(patience, 2 * (SteadyClock::now() - start));
      continue;
    }
    long long left = std::max<long long>(millis_until(wake).count(), 0);
    int rc =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left + 1, 1 << 30)));
    if (rc < 0 && errno != EINTR) {
      for (size_t i : which) opening[i].give_up(Millis(0));
      break;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (rc > 0 && fds[k].revents) opening[which[k]].step();
    }
    for (size_t i : which) {
      if (opening[i].opened()) took[i] = std::chrono::ceil<Millis>(SteadyClock::now() - start);
    }
  }
  std::vector<Opened> out;
  for (size_t i = 0; i < opening.size(); ++i) {
    out.push_back(opening[i].take());
    out.back().took = took[i];
  }
  return out;
}

}  // namespace rlock::redis
