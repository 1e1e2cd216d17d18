#pragma once

// OpenSSL 3, loaded (dlopen) by the first rediss:// connection of a process rather than
// linked: mapping and relocating libssl and libcrypto cost every rlock process about
// 1.5 MiB of resident memory and a few hundred microseconds, which plain redis:// runs (the
// cron tick, the CI step) would pay for nothing. The headers give the types and
// prototypes; no OpenSSL symbol is linked, so a call that is not in the table below fails
// the link instead of loading the library behind our back.
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace rlock::redis {

// Functions, not macros: SSL_CTX_set_mode and the like expand to SSL_CTX_ctrl/SSL_ctrl,
// SSL_set_app_data to SSL_set_ex_data; they are called as such.
#define RLOCK_OPENSSL_FUNCTIONS(X)      \
  X(ASN1_TIME_to_tm)                    \
  X(BIO_free)                           \
  X(BIO_new_mem_buf)                    \
  X(ERR_clear_error)                    \
  X(ERR_peek_last_error)                \
  X(ERR_reason_error_string)            \
  X(EVP_PKEY_free)                      \
  X(PEM_read_bio_PrivateKey)            \
  X(SSL_CTX_check_private_key)          \
  X(SSL_CTX_ctrl)                       \
  X(SSL_CTX_free)                       \
  X(SSL_CTX_load_verify_locations)      \
  X(SSL_CTX_new)                        \
  X(SSL_CTX_set_client_cert_cb)         \
  X(SSL_CTX_set_default_verify_paths)   \
  X(SSL_CTX_set_verify)                 \
  X(SSL_CTX_use_PrivateKey)             \
  X(SSL_CTX_use_certificate_chain_file) \
  X(SSL_connect)                        \
  X(SSL_ctrl)                           \
  X(SSL_free)                           \
  X(SSL_get0_param)                     \
  X(SSL_get0_peer_certificate)          \
  X(SSL_get_error)                      \
  X(SSL_get_ex_data)                    \
  X(SSL_get_verify_result)              \
  X(SSL_new)                            \
  X(SSL_pending)                        \
  X(SSL_read)                           \
  X(SSL_set1_host)                      \
  X(SSL_set_ex_data)                    \
  X(SSL_set_fd)                         \
  X(SSL_write)                          \
  X(TLS_client_method)                  \
  X(X509_VERIFY_PARAM_set1_ip_asc)      \
  X(X509_get0_notAfter)                 \
  X(X509_verify_cert_error_string)

struct OpenSsl {
#define RLOCK_OPENSSL_MEMBER(name) decltype(&::name) name;
  RLOCK_OPENSSL_FUNCTIONS(RLOCK_OPENSSL_MEMBER)
#undef RLOCK_OPENSSL_MEMBER
};

// The table, loaded on the first call (thread-safe; never unloaded). Throws
// UnavailableError (69) naming the package when libssl.so.3 cannot be loaded or lacks a
// function.
const OpenSsl& openssl();

}  // namespace rlock::redis
