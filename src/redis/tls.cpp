#include "redis/tls.hpp"

#include "redis/openssl_api.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// The reason of OpenSSL's most recent error, or `fallback` when it recorded none.
std::string openssl_reason(const char* fallback) {
  unsigned long e = openssl().ERR_peek_last_error();
  const char* reason = e ? openssl().ERR_reason_error_string(e) : nullptr;
  openssl().ERR_clear_error();
  return reason ? reason : fallback;
}

void load_trust(SSL_CTX* ctx, const TlsConfig& c) {
  if (c.ca_file.empty() && c.ca_dir.empty()) {
    if (openssl().SSL_CTX_set_default_verify_paths(ctx) != 1)
      throw UsageError("cannot load the system's trusted CAs: " + openssl_reason("unknown"));
    return;
  }
  const char* file = c.ca_file.empty() ? nullptr : c.ca_file.c_str();
  const char* dir = c.ca_dir.empty() ? nullptr : c.ca_dir.c_str();
  if (openssl().SSL_CTX_load_verify_locations(ctx, file, dir) != 1) {
    std::string what = file ? "--tls-ca-cert " + c.ca_file : "--tls-ca-dir " + c.ca_dir;
    throw UsageError("cannot load the CA certificates of " + what + ": " +
                     openssl_reason("not PEM"));
  }
}

// Called by OpenSSL when the server asks for a client certificate and none is configured:
// notes it (for the message if the server then drops the connection) and sends none, so
// that a server that only offers client authentication goes on.
int no_client_certificate(SSL* ssl, X509**, EVP_PKEY**) {
  if (auto* notes = static_cast<TlsSessionNotes*>(openssl().SSL_get_ex_data(ssl, 0)))
    notes->asked_for_certificate = true;
  return 0;
}

void load_client_identity(SSL_CTX* ctx, const TlsConfig& c) {
  if (c.cert_file.empty() != c.key_pem.empty())
    throw UsageError("--tls-cert and --tls-key go together: give both or neither");
  if (c.cert_file.empty()) {
    openssl().SSL_CTX_set_client_cert_cb(ctx, no_client_certificate);
    return;
  }
  if (openssl().SSL_CTX_use_certificate_chain_file(ctx, c.cert_file.c_str()) != 1) {
    throw UsageError("cannot load the client certificate --tls-cert " + c.cert_file + ": " +
                     openssl_reason("not PEM"));
  }
  BIO* bio = openssl().BIO_new_mem_buf(c.key_pem.data(), static_cast<int>(c.key_pem.size()));
  EVP_PKEY* key = bio ? openssl().PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  openssl().BIO_free(bio);
  if (!key) {
    throw UsageError("cannot load the private key --tls-key " + c.key_from + ": " +
                     openssl_reason("not a PEM private key without a passphrase"));
  }
  int used = openssl().SSL_CTX_use_PrivateKey(ctx, key);
  openssl().EVP_PKEY_free(key);
  if (used != 1 || openssl().SSL_CTX_check_private_key(ctx) != 1) {
    openssl().ERR_clear_error();
    throw UnavailableError("the private key --tls-key " + c.key_from +
                           " does not match the certificate --tls-cert " + c.cert_file);
  }
}

}  // namespace

TlsContext::TlsContext(const TlsConfig& config)
    : ctx_(openssl().SSL_CTX_new(openssl().TLS_client_method())), insecure_(config.insecure) {
  SSL_CTX* raw = ctx_.get();
  if (!raw) throw UnavailableError("cannot set up TLS: " + openssl_reason("out of memory"));
  openssl().SSL_CTX_ctrl(raw, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  // Writes resume from where a partial one stopped (non-blocking sockets).
  openssl().SSL_CTX_ctrl(raw, SSL_CTRL_MODE,
                         SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                         nullptr);
  openssl().SSL_CTX_set_verify(raw, config.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  if (!config.insecure) load_trust(raw, config);
  load_client_identity(raw, config);
}

void TlsContext::Deleter::operator()(ssl_ctx_st* ctx) const { openssl().SSL_CTX_free(ctx); }

}  // namespace rlock::redis
