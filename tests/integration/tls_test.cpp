// TLS: rediss:// against redis-server --tls-port with certificates the harness makes. The
// harness checks the servers through their plain port, never through rlock's TLS code.
#include <doctest/doctest.h>
#include <unistd.h>

#include "harness.hpp"

namespace rlock::test {
namespace {

const TestCertificates& certs() { return test_certificates(); }

RedisServer tls_server(const std::string& cert, bool auth_clients = false,
                       std::string requirepass = {}) {
  return RedisServer(RedisOptions{.requirepass = std::move(requirepass),
                                  .test_topology = false,
                                  .tls = TlsListener{cert, certs().server_key, auth_clients}});
}

std::vector<std::string> with(std::vector<std::string> global,
                              const std::vector<std::string>& args) {
  global.insert(global.end(), args.begin(), args.end());
  return global;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("tls: lock, unlock, exec and a waiting hand-off over rediss://") {
  RedisServer redis = tls_server(certs().server_ip, false, "s3cret");
  const std::vector<std::string> global = {
      "--url", "rediss://:s3cret@127.0.0.1:" + std::to_string(redis.tls_port()), "--tls-ca-cert",
      certs().ca};

  auto r = rlock_raw(with(global, {"lock", "L", "--owner", "a", "--lease", "30s"}));
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out)["owner"] == "a");
  CHECK(hash_of(redis, lock_key("L")) == json{{"a", "1"}});

  // A waiter sleeps on pub/sub over its own TLS connection until the holder lets go.
  Spawned waiter(with({rlock_binary()}, with(global, {"exec", "--wait", "20s", "L", "--", "sh",
                                                      "-c", "echo ran:$RLOCK_NAME"})));
  REQUIRE(poll_until([&] { return subscribers(redis, lock_channel("L")) >= 1; }, 10s));
  r = rlock_raw(with(global, {"unlock", "L", "--owner", "a"}));
  CHECK(r.status == 0);
  CHECK(waiter.wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(waiter.out() == "ran:L\n");
  CHECK(redis.cmd_int({"EXISTS", lock_key("L")}) == 0);

  // A DNS name is checked against the certificate's DNS SAN (and sent as SNI); the CA
  // also comes from a hashed directory, here through the environment.
  RedisServer named = tls_server(certs().server_dns);
  r = rlock_raw({"--url", "rediss://localhost:" + std::to_string(named.tls_port()), "exec", "N",
                 "--", "true"},
                {{"RLOCK_TLS_CA_DIR", certs().ca_dir}});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
}

TEST_CASE("tls: a quorum over rediss-quorum:// locks, hands off and fences on every member") {
  std::vector<RedisServer> members;
  for (int i = 0; i < 3; ++i) members.push_back(tls_server(certs().server_ip, false, "s3cret"));
  std::string url = "rediss-quorum://:s3cret@";
  for (size_t i = 0; i < members.size(); ++i)
    url += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(members[i].tls_port());
  const std::vector<std::string> global = {"--url", url, "--tls-ca-cert", certs().ca};

  auto r = rlock_raw(with(global, {"lock", "Q", "--owner", "a", "--lease", "30s"}));
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const long long fence = parse_json(r.out).at("fence").get<long long>();
  for (const RedisServer& m : members) CHECK(hash_of(m, lock_key("Q"))["a"] == "1");

  // The waiter subscribes on every member over TLS and runs once the release reached them.
  Spawned waiter(with({rlock_binary()}, with(global, {"exec", "--wait", "20s", "Q", "--", "sh",
                                                      "-c", "echo ran:$RLOCK_FENCE"})));
  REQUIRE(poll_until(
      [&] {
        for (const RedisServer& m : members) {
          if (subscribers(m, lock_channel("Q")) < 1) return false;
        }
        return true;
      },
      10s));
  r = rlock_raw(with(global, {"unlock", "Q", "--owner", "a"}));
  CHECK(r.status == 0);
  CHECK(waiter.wait(deadline(20s)).value_or(kStillRunning) == 0);
  const std::string out = waiter.out();
  REQUIRE(out.rfind("ran:", 0) == 0);
  CHECK(std::stoll(out.substr(4)) > fence);
  for (const RedisServer& m : members) CHECK(m.cmd_int({"EXISTS", lock_key("Q")}) == 0);

  // A stopped member accepts the connection and never finishes the TLS handshake: the
  // others are opened at the same time and go on without it, for a lock, a waiter's
  // subscription and the release that wakes it.
  members[0].freeze();
  const auto started = Clock::now();
  r = rlock_raw(with(global, {"--timeout", "2s", "lock", "Q", "--owner", "b"}));
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(ms_between(started) < 1'500);
  Spawned frozen_waiter(with({rlock_binary()}, with(global, {"--timeout", "2s", "exec", "--wait",
                                                             "20s", "Q", "--", "echo", "ran"})));
  REQUIRE(poll_until([&] { return subscribers(members[2], lock_channel("Q")) >= 1; }, 10s));
  r = rlock_raw(with(global, {"--timeout", "2s", "unlock", "Q", "--owner", "b"}));
  CHECK(r.status == 0);
  CHECK(frozen_waiter.wait(deadline(20s)).value_or(kStillRunning) == 0);
  CHECK(frozen_waiter.out() == "ran\n");
  // Alone, the stopped member is waited for as long as --connect-timeout says.
  r = rlock_raw({"--url", "rediss://:s3cret@127.0.0.1:" + std::to_string(members[0].tls_port()),
                 "--tls-ca-cert", certs().ca, "--connect-timeout", "300ms", "lock", "Q"});
  CHECK(r.status == 69);
  CHECK(r.err ==
        "rlock: TLS handshake with redis at 127.0.0.1:" + std::to_string(members[0].tls_port()) +
            " did not finish in time (--connect-timeout; does the server speak TLS on "
            "this port?)\n");
  members[0].thaw();
}

TEST_CASE("tls: a certificate or key that does not verify exits 69 with one line naming why") {
  RedisServer by_ip = tls_server(certs().server_ip);
  RedisServer expired = tls_server(certs().server_expired);
  RedisServer wrong = tls_server(certs().server_wrong);
  RedisServer demanding = tls_server(certs().server_ip, true);
  RedisServer plain;
  auto at = [](const RedisServer& s) { return s.tls_url(); };
  const std::string ca = certs().ca;

  struct Case {
    const char* what;
    const RedisServer* server;
    std::vector<std::string> global;
    const char* says;
  };
  const Case cases[] = {
      {"unknown CA (system store)", &by_ip, {"--url", at(by_ip)}, "does not verify"},
      {"unknown CA (another CA given)",
       &by_ip,
       {"--url", at(by_ip), "--tls-ca-cert", certs().other_ca},
       "does not verify"},
      {"expired", &expired, {"--url", at(expired), "--tls-ca-cert", ca}, "certificate has expired"},
      {"wrong IP", &wrong, {"--url", at(wrong), "--tls-ca-cert", ca}, "IP address mismatch"},
      {"wrong host name",
       &by_ip,
       {"--url", "rediss://localhost:" + std::to_string(by_ip.tls_port()), "--tls-ca-cert", ca},
       "hostname mismatch"},
      {"no client certificate for a server that demands one",
       &demanding,
       {"--url", at(demanding), "--tls-ca-cert", ca},
       "certificate required"},
      {"a key that does not match the certificate",
       &demanding,
       {"--url", at(demanding), "--tls-ca-cert", ca, "--tls-cert", certs().client_cert, "--tls-key",
        certs().stray_key},
       "does not match"},
      {"a plain server",
       &plain,
       {"--url", "rediss://" + plain.url().substr(8), "--tls-ca-cert", ca},
       "TLS handshake"},
  };
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.what));
    for (const auto& sub : std::vector<std::vector<std::string>>{
             {"lock", "L", "--owner", "a"}, {"exec", "L", "--", "echo", "ran"}}) {
      CAPTURE(sub[0]);
      auto r = rlock_raw(with(c.global, sub), {}, 30s);
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.status == 69);
      CHECK(line_count(r.err) == 1);
      CHECK(has(r.err, c.says));
      CHECK(r.out.empty());
    }
    CHECK(c.server->cmd_int({"DBSIZE"}) == 0);
  }
}

TEST_CASE("tls: libssl is loaded for rediss URLs only; without it one line names the package") {
  // libssl.so.3 hidden from rlock alone: /dev/null mounted over it in a mount namespace of
  // its own (the suite runs as root, as CI does).
  REQUIRE_MESSAGE(::geteuid() == 0, "this case needs root (unshare -m, mount --bind)");
  RedisServer tls = tls_server(certs().server_ip);
  RedisServer plain;
  const std::string hide =
      "lib=$(readlink -f \"$(ldconfig -p | awk '/libssl\\.so\\.3 .*x86-64/ {print $NF; exit}')\") "
      "&& "
      "[ -f \"$lib\" ] && mount --bind /dev/null \"$lib\" && exec \"$@\"";
  auto without_libssl = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"unshare", "-m", "sh", "-c", hide, "sh", rlock_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  };

  auto r = without_libssl({"--url", plain.url(), "exec", "P", "--", "echo", "ran"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "ran\n");

  r = without_libssl({"--url", tls.tls_url(), "--tls-ca-cert", certs().ca, "lock", "L"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 69);
  CHECK(line_count(r.err) == 1);
  CHECK(has(r.err, "install the libssl3 package"));
  CHECK(r.out.empty());
  CHECK(tls.cmd_int({"DBSIZE"}) == 0);
}

TEST_CASE("tls: a client certificate for a server that demands one; its key must be private") {
  RedisServer redis = tls_server(certs().server_ip, true);
  const std::vector<std::string> global = {"--url",     redis.tls_url(),   "--tls-ca-cert",
                                           certs().ca,  "--tls-cert",      certs().client_cert,
                                           "--tls-key", certs().client_key};
  auto r = rlock_raw(with(global, {"lock", "L", "--owner", "a"}));
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("L")) == json{{"a", "1"}});

  TempDir dir;
  write_file(dir / "open.key", read_file(certs().client_key), 0644);
  r = rlock_raw({"--url", redis.tls_url(), "--tls-ca-cert", certs().ca, "--tls-cert",
                 certs().client_cert, "--tls-key", dir / "open.key", "lock", "M", "--owner", "a"});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(has(r.err, "chmod 600"));
  CHECK(redis.cmd_int({"EXISTS", lock_key("M")}) == 0);
}

TEST_CASE("tls: --tls-insecure connects to any certificate and says so on stderr") {
  RedisServer wrong = tls_server(certs().server_wrong);
  auto r = rlock_raw({"--url", wrong.tls_url(), "--tls-insecure", "lock", "L", "--owner", "a"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(line_count(r.err) == 1);
  CHECK(has(r.err, "not checked"));
  CHECK(hash_of(wrong, lock_key("L")) == json{{"a", "1"}});
  // Also from the environment, and even with -q: it is a warning.
  r = rlock_raw({"-q", "--url", wrong.tls_url(), "unlock", "L", "--owner", "a"},
                {{"RLOCK_TLS_INSECURE", "1"}});
  CHECK(r.status == 0);
  CHECK(has(r.err, "RLOCK_TLS_INSECURE"));
  CHECK(wrong.cmd_int({"EXISTS", lock_key("L")}) == 0);
}

TEST_CASE("tls: options from the environment and the config file; flags need a rediss URL") {
  RedisServer redis = tls_server(certs().server_ip, true);
  TempDir dir;
  const std::string config = dir / "config.json";
  write_file(config,
             json{{"url", redis.tls_url()},
                  {"tls_ca_cert", certs().ca},
                  {"tls_cert", certs().client_cert},
                  {"tls_key", certs().client_key}}
                 .dump(),
             0600);
  auto r = rlock_raw({"lock", "C", "--owner", "a"}, {{"RLOCK_CONFIG", config}});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("C")) == json{{"a", "1"}});

  r = rlock_raw({"lock", "E", "--owner", "a"}, {{"RLOCK_URL", redis.tls_url()},
                                                {"RLOCK_TLS_CA_CERT", certs().ca},
                                                {"RLOCK_TLS_CERT", certs().client_cert},
                                                {"RLOCK_TLS_KEY", certs().client_key}});
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("E")) == json{{"a", "1"}});

  // A flag beats the environment: the wrong CA fails.
  r = rlock_raw({"--tls-ca-cert", certs().other_ca, "lock", "F", "--owner", "a"},
                {{"RLOCK_URL", redis.tls_url()}, {"RLOCK_TLS_CA_CERT", certs().ca}});
  CHECK(r.status == 69);

  r = rlock_raw({"--url", redis.url(), "--tls-ca-cert", certs().ca, "lock", "P", "--owner", "a"});
  CHECK(r.status == 64);
  CHECK(has(r.err, "rediss"));
  CHECK(redis.cmd_int({"EXISTS", lock_key("F")}) == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("P")}) == 0);
}

TEST_CASE("tls: rediss-sentinel:// reaches sentinels and the master over TLS") {
  RedisServer master = tls_server(certs().server_ip);
  RedisServer sentinel(RedisOptions{
      .config = {"sentinel monitor m 127.0.0.1 " + std::to_string(master.tls_port()) + " 1",
                 "sentinel down-after-milliseconds m 60000", "tls-replication yes"},
      .args = {"--sentinel"},
      .test_topology = false,
      .tls = TlsListener{certs().server_ip, certs().server_key, false}});
  auto r = rlock_raw({"--url",
                      "rediss-sentinel://127.0.0.1:" + std::to_string(sentinel.tls_port()) + "/m",
                      "--tls-ca-cert", certs().ca, "exec", "S", "--", "sh", "-c", "echo ran"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "ran\n");
  CHECK(master.cmd_int({"EXISTS", fence_key("S")}) == 1);
}

}  // namespace
}  // namespace rlock::test
