#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redis/tls.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::redis {

// What one non-blocking read or write did.
struct IoStatus {
  enum Kind {
    kDone,       // `bytes` moved (a read of 0 bytes is never kDone: it is kClosed)
    kWantRead,   // try again once the socket is readable
    kWantWrite,  // try again once the socket is writable
    kClosed,     // the peer closed the connection
    kFailed,     // `why` says what went wrong (errno text, or the TLS reason)
  };
  Kind kind = kDone;
  size_t bytes = 0;
  std::string why;
};

// The byte stream under a Connection: a non-blocking, close-on-exec socket (TCP or unix),
// read and written as it is (plain) or through an OpenSSL session (TLS). Everything above
// it, the protocol, timeouts and errors, is the same code for both. Move-only.
class Transport {
 public:
  virtual ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Connects to `endpoint` (and, with `tls`, completes the handshake, verifying the server's
  // certificate and name unless TlsContext::verify() is false) within `timeout`. Nothing of the
  // caller's is sent before the handshake succeeded. Throws UnavailableError with one line
  // that names the server and the cause.
  static std::unique_ptr<Transport> open(const Endpoint& endpoint,
                                         const std::shared_ptr<const TlsContext>& tls,
                                         Millis timeout);

  struct ToOpen {
    Endpoint endpoint;
    std::shared_ptr<const TlsContext> tls;
    Millis timeout;  // the TCP connect and the TLS handshake together
  };
  struct Opened {
    std::unique_ptr<Transport> transport;  // null: `failure` says why, in one line
    std::string failure;
    Millis took{0};  // from the start to open
  };
  // Opens every connection at once, as open() opens one, so that a host that takes long
  // (a stopped server's TLS handshake, a connect nobody answers) holds up no other. Once
  // `needed` are open the rest get `patience`, or twice what those took if longer, not
  // their whole timeout: a quorum goes on with the members that answer.
  static std::vector<Opened> open_each(const std::vector<ToOpen>& each, size_t needed,
                                       Millis patience);

  virtual IoStatus write_some(const char* data, size_t size) = 0;
  virtual IoStatus read_some(char* buffer, size_t size) = 0;
  // True when bytes were received and decoded but not handed out yet (a TLS record larger
  // than the last read_some): poll() on fd() would not announce them.
  virtual bool buffered() const { return false; }
  // When the certificate the server presented in the handshake stops being valid
  // (notAfter); nullopt on a plain connection. `rlock doctor` reports it from the
  // connection requests use, so that what it says is what those requests were shown.
  virtual std::optional<std::chrono::system_clock::time_point> peer_certificate_expiry() const {
    return std::nullopt;
  }
  int fd() const { return fd_; }
  // Closing sends a reset (SO_LINGER 0) instead of the orderly FIN: for a connection whose
  // every reply was read (see ~Connection).
  void reset_on_close() const;

 protected:
  explicit Transport(int fd) : fd_(fd) {}

 private:
  int fd_;
};

}  // namespace rlock::redis
