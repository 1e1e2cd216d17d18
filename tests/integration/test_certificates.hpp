// The TLS certificates of the suite, made with openssl once per test run.
#pragma once

#include <string>

namespace rlock::test {

// Certificates made once per test run with `openssl` in a directory of their own: a CA, the
// server certificates it signed (each SAN named), a client certificate, a key that matches
// nothing, and a second CA that signed nothing rlock is shown.
struct TestCertificates {
  std::string ca;              // the CA's certificate
  std::string ca_dir;          // a directory holding only the CA, hashed (openssl rehash)
  std::string other_ca;        // a CA that did not sign any server certificate
  std::string server_key;      // the key of every server certificate below
  std::string server_ip;       // SAN IP:127.0.0.1
  std::string server_dns;      // SAN DNS:localhost
  std::string server_expired;  // SAN IP:127.0.0.1 and DNS:localhost, expired yesterday
  std::string server_wrong;    // SAN DNS:elsewhere.invalid only
  std::string client_cert;     // signed by the CA
  std::string client_key;      // mode 600
  std::string stray_key;       // mode 600, matches no certificate
};
const TestCertificates& test_certificates();

}  // namespace rlock::test
