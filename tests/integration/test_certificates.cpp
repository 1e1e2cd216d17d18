// test_certificates() and the certificate that expires soon (doctor_topology_test.cpp).
#include "test_certificates.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "processes.hpp"
#include "test_files.hpp"

namespace rlock::test {

namespace {

// Runs openssl with `args`; throws with its output when it fails.
void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv, {}, 60s);
  if (r.status != 0) throw std::runtime_error("openssl " + args.front() + " failed: " + r.err);
}

// A fresh P-256 key and a certificate for it signed by the CA in `dir` (ca.crt, ca.key).
void issue(const TempDir& dir, const std::string& name, const std::string& key,
           const std::string& san, const std::string& days) {
  openssl({"req", "-new", "-key", key, "-subj", "/CN=" + name, "-out", dir / (name + ".csr")});
  write_file(dir / (name + ".ext"), san.empty() ? "" : "subjectAltName=" + san + "\n");
  std::vector<std::string> args{"x509",
                                "-req",
                                "-in",
                                dir / (name + ".csr"),
                                "-CA",
                                dir / "ca.crt",
                                "-CAkey",
                                dir / "ca.key",
                                "-CAcreateserial",
                                "-days",
                                days,
                                "-out",
                                dir / (name + ".crt")};
  if (!san.empty()) args.insert(args.end(), {"-extfile", dir / (name + ".ext")});
  openssl(args);
}

void make_key(const std::string& path) {
  openssl({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path});
  ::chmod(path.c_str(), 0600);
}

}  // namespace

namespace {
TempDir& certificate_dir() {
  static TempDir dir;
  return dir;
}
}  // namespace

const TestCertificates& test_certificates() {
  static TempDir& dir = certificate_dir();
  static const TestCertificates certs = [] {
    make_key(dir / "ca.key");
    openssl({"req", "-x509", "-new", "-key", dir / "ca.key", "-subj", "/CN=rlock test CA", "-days",
             "365", "-out", dir / "ca.crt"});
    make_key(dir / "other.key");
    openssl({"req", "-x509", "-new", "-key", dir / "other.key", "-subj", "/CN=another CA", "-days",
             "30", "-out", dir / "other.crt"});
    std::filesystem::create_directory(dir / "cadir");
    std::filesystem::copy_file(dir / "ca.crt", dir / "cadir/ca.pem");
    openssl({"rehash", dir / "cadir"});
    make_key(dir / "server.key");
    // A year: rlock doctor warns about a certificate with fewer than 30 days left.
    issue(dir, "server-ip", dir / "server.key", "IP:127.0.0.1", "365");
    issue(dir, "server-dns", dir / "server.key", "DNS:localhost", "365");
    issue(dir, "server-expired", dir / "server.key", "IP:127.0.0.1,DNS:localhost", "-1");
    issue(dir, "server-wrong", dir / "server.key", "DNS:elsewhere.invalid", "30");
    make_key(dir / "client.key");
    issue(dir, "client", dir / "client.key", "", "30");
    make_key(dir / "stray.key");
    return TestCertificates{dir / "ca.crt",
                            dir / "cadir",
                            dir / "other.crt",
                            dir / "server.key",
                            dir / "server-ip.crt",
                            dir / "server-dns.crt",
                            dir / "server-expired.crt",
                            dir / "server-wrong.crt",
                            dir / "client.crt",
                            dir / "client.key",
                            dir / "stray.key"};
  }();
  return certs;
}

std::string server_certificate_expiring_soon() {
  static const std::string path = [] {
    TempDir& dir = certificate_dir();
    test_certificates();  // the CA and the server key
    issue(dir, "server-soon", dir / "server.key", "IP:127.0.0.1", "10");
    return dir / "server-soon.crt";
  }();
  return path;
}

}  // namespace rlock::test
