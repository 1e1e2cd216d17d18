#pragma once

#include <memory>
#include <string>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX: never named outside src/redis

namespace rlock::redis {

// What a TLS connection trusts and presents. Defaults: the system's trusted CAs, no client
// certificate, verification on.
struct TlsConfig {
  std::string ca_file;    // PEM file of trusted CAs; with ca_dir, instead of the system's
  std::string ca_dir;     // directory of hashed CA certificates (c_rehash)
  std::string cert_file;  // client certificate chain (PEM), for servers that demand one
  std::string key_pem;    // the client certificate's private key, PEM text (not a path:
                          // the caller read it from a file only its owner may read)
  std::string key_from;   // where key_pem came from, for messages
  bool insecure = false;  // no certificate or host-name verification at all
};

// What one TLS session noticed during its handshake (the SSL's app data, see Transport).
struct TlsSessionNotes {
  // The server asked for a client certificate, and none is configured.
  bool asked_for_certificate = false;
};

// An OpenSSL client context made once per process from a TlsConfig and shared by every
// connection (move-only; held through std::shared_ptr in ConnectOptions).
class TlsContext {
 public:
  // Loads the CAs and the client certificate and key. Throws UsageError (64) for a file
  // that cannot be read or parsed, UnavailableError (69) for a key that does not match the
  // certificate.
  explicit TlsContext(const TlsConfig& config);
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* get() const { return ctx_.get(); }
  // False with TlsConfig::insecure: no certificate or host name is checked.
  bool verify() const { return !insecure_; }

 private:
  struct Deleter {
    void operator()(ssl_ctx_st* ctx) const;
  };
  std::unique_ptr<ssl_ctx_st, Deleter> ctx_;
  bool insecure_;
};

}  // namespace rlock::redis
