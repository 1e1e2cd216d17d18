// rlock doctor on what only a Sentinel deployment, a cluster or TLS has: the sentinels and
// their quorum, the replicas' lag, min-replicas-to-write, slot coverage, certificate
// expiry. One deployment per test case, misconfigured step by step, to keep the suite short.
#include <doctest/doctest.h>

#include <set>

#include "deployments.hpp"
#include "harness.hpp"

namespace rlock::test {

// test_certificates.cpp: like test_certificates().server_ip (IP:127.0.0.1, the same CA and
// key) but valid for 10 days. Declared here rather than in harness.hpp, which every
// integration test includes: one test needs it.
std::string server_certificate_expiring_soon();

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every finding `check` of a doctor result.
std::vector<json> findings(const json& doc, const std::string& check) {
  std::vector<json> out;
  for (const auto& f : doc.at("findings")) {
    if (f.at("check") == check) out.push_back(f);
  }
  return out;
}

json finding(const json& doc, const std::string& check) {
  auto all = findings(doc, check);
  if (all.empty()) FAIL("no finding " << check << " in " << doc.dump());
  return all.front();
}

// The finding `check` about `server` (127.0.0.1:PORT).
json finding_for(const json& doc, const std::string& check, int port) {
  for (const auto& f : findings(doc, check)) {
    if (f.at("server") == "127.0.0.1:" + std::to_string(port)) return f;
  }
  FAIL("no finding " << check << " for port " << port << " in " << doc.dump());
  return {};
}

json doctor(const std::string& url, int expected_status) {
  auto r = rlock_raw({"--url", url, "doctor"});
  INFO(r.out << r.err);
  CHECK(r.status == expected_status);
  return json::parse(r.out);
}

TEST_CASE("doctor: sentinels, their quorum, a lagging replica and min-replicas-to-write") {
  SentinelSetup setup;
  RedisServer& master = setup.data(0);
  json doc = doctor(setup.url(), 0);
  CHECK(finding(doc, "quorum").at("level") == "ok");
  CHECK(has(finding(doc, "quorum").at("detail"), "3 of 3 sentinels reachable"));
  for (size_t i = 0; i < setup.sentinel_count(); ++i)
    CHECK(finding_for(doc, "sentinel", setup.sentinel(i).port()).at("level") == "ok");
  CHECK(finding(doc, "replication").at("level") == "ok");
  CHECK(has(finding(doc, "replication").at("detail"), "1 replica(s) connected"));
  json min = finding(doc, "min-replicas");
  CHECK(min.at("level") == "warn");
  CHECK(has(min.at("detail"), "keeps accepting holds that a failover then loses"));

  master.cmd({"CONFIG", "SET", "min-replicas-to-write", "1"});
  doc = doctor(setup.url(), 0);
  CHECK(finding(doc, "min-replicas").at("level") == "ok");
  master.cmd({"CONFIG", "SET", "min-replicas-to-write", "0"});

  // A frozen replica stops acknowledging: its lag grows by a second a second until the
  // master drops it (repl-timeout).
  setup.data(1).freeze();
  REQUIRE(poll_until(
      [&] {
        auto fields = info_fields(master.cmd_str({"INFO", "replication"}));
        auto entry = fields["slave0"];
        auto at = entry.find("lag=");
        return at != std::string::npos && std::stoll(entry.substr(at + 4)) >= 2;
      },
      10s));
  doc = doctor(setup.url(), 0);
  setup.data(1).thaw();
  json lag = finding(doc, "replication");
  CHECK(lag.at("level") == "warn");
  CHECK(has(lag.at("detail"), "lags more than 1s"));

  // One sentinel gone: the others still make the quorum (2) and the majority.
  setup.sentinel(2).stop();
  doc = doctor(setup.url(), 0);
  CHECK(finding_for(doc, "sentinel", setup.sentinel(2).port()).at("level") == "warn");
  CHECK(finding(doc, "quorum").at("level") == "ok");
  CHECK(has(finding(doc, "quorum").at("detail"), "2 of 3 sentinels reachable"));

  // Two gone: once the last one has marked them down, no failover can be authorized.
  setup.sentinel(1).stop();
  REQUIRE(poll_until(
      [&] {
        try {
          setup.sentinel(0).cmd({"SENTINEL", "CKQUORUM", setup.master_name()});
          return false;
        } catch (const RedisError&) {
          return true;
        }
      },
      10s));
  doc = doctor(setup.url(), 1);
  json quorum = finding(doc, "quorum");
  CHECK(quorum.at("level") == "fail");
  CHECK(has(quorum.at("detail"), "NOQUORUM"));
  CHECK(doc.at("ok") == false);
}

TEST_CASE("doctor: tls certificate days left: warn under 30 days, fail expired, ok otherwise") {
  const TestCertificates& certs = test_certificates();
  auto server = [&](const std::string& cert) {
    return RedisServer(
        RedisOptions{.test_topology = false, .tls = TlsListener{cert, certs.server_key, false}});
  };
  RedisServer soon = server(server_certificate_expiring_soon());
  auto r = rlock_raw({"--url", soon.tls_url(), "--tls-ca-cert", certs.ca, "doctor"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  json f = finding(json::parse(r.out), "certificate");
  CHECK(f.at("level") == "warn");
  CHECK(has(f.at("detail"), "in 9 day(s)"));

  RedisServer good = server(certs.server_ip);
  r = rlock_raw({"--url", good.tls_url(), "--tls-ca-cert", certs.ca, "doctor"});
  f = finding(json::parse(r.out), "certificate");
  CHECK(f.at("level") == "ok");
  CHECK(has(f.at("detail"), "(364 days)"));

  // Only --tls-insecure gets a connection to a server whose certificate expired.
  RedisServer expired = server(certs.server_expired);
  r = rlock_raw({"--url", expired.tls_url(), "--tls-insecure", "doctor"});
  CHECK(r.status == 1);
  f = finding(json::parse(r.out), "certificate");
  CHECK(f.at("level") == "fail");
  CHECK(has(f.at("detail"), "expired on"));

  // A plain connection has no certificate to speak of.
  r = rlock_raw({"--url", good.url(), "doctor"});
  CHECK(findings(json::parse(r.out), "certificate").empty());
}

}  // namespace
}  // namespace rlock::test
