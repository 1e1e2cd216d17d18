// Reaching Redis: refused/timeouts/TLS/auth failures (69), passwords from URL, environment
// and file, ACL users, unix sockets and database numbers.
#include "redis/connection.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib_util.hpp"

namespace rlock::test {
namespace {

std::string with_port(const std::string& scheme_and_auth, int port, const std::string& tail = "") {
  return scheme_and_auth + "127.0.0.1:" + std::to_string(port) + tail;
}

// The IPv4 sockets on this host toward `port` whose side closed first: FIN_WAIT1,
// FIN_WAIT2, CLOSING and TIME_WAIT in /proc/net/tcp (one socket goes through them in turn,
// and is counted in each).
size_t closed_first_to(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  size_t n = 0;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    const size_t colon = remote.find(':');
    const bool closing = state == "04" || state == "05" || state == "06" || state == "0B";
    if (closing && colon != std::string::npos &&
        std::stoi(remote.substr(colon + 1), nullptr, 16) == port)
      ++n;
  }
  return n;
}

TEST_CASE("connection: unreachable, TLS, timeouts and refused auth exit 69 with one line") {
  RedisServer redis(RedisOptions{.requirepass = "s3cret"});
  int silent_port = 0;
  Fd silent = listen_silently(&silent_port);  // accepts nothing, answers nothing
  const int dead_port = free_port();

  struct Case {
    const char* what;
    std::vector<std::string> global;  // options before the subcommand
  };
  const Case cases[] = {
      {"connection refused", {"--url", with_port("redis://", dead_port)}},
      // The plain server may wait for the rest of a "command" that is a ClientHello: the
      // handshake ends at --connect-timeout (and a clean-up connection tries again).
      {"rediss:// to a server without TLS",
       {"--url", with_port("rediss://:s3cret@", redis.port()), "--connect-timeout", "1s"}},
      {"no reply", {"--url", with_port("redis://", silent_port), "--timeout", "500ms"}},
      {"wrong password", {"--url", with_port("redis://:wrong@", redis.port())}},
      {"no password", {"--url", with_port("redis://", redis.port())}},
      {"unknown ACL user", {"--url", with_port("redis://nobody:s3cret@", redis.port())}},
  };
  for (const auto& c : cases) {
    INFO("case: " << std::string(c.what));
    for (const auto& sub : std::vector<std::vector<std::string>>{
             {"lock", "L", "--owner", "a"}, {"exec", "L", "--", "true"}, {"inspect"}}) {
      CAPTURE(sub[0]);
      auto args = c.global;
      args.insert(args.end(), sub.begin(), sub.end());
      auto r = rlock_raw(args);
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.status == 69);
      CHECK(line_count(r.err) == 1);
      CHECK(r.out.empty());
      CHECK(r.elapsed < 5s);
    }
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
}

TEST_CASE("connection: password from URL, RLOCK_PASSWORD, --password-file; ACL users; db") {
  RedisServer redis(
      RedisOptions{.requirepass = "s3cret", .config = {"user alice on >alicepw ~* &* +@all"}});
  TempDir dir;
  const std::string plain_url = redis.url();

  auto lock_as = [&](const std::string& name, const std::vector<std::string>& global,
                     const Env& env = {}) {
    auto args = global;
    args.insert(args.end(), {"lock", name, "--owner", "a"});
    return rlock_raw(args, env);
  };

  auto r = lock_as("url-pw", {"--url", with_port("redis://:s3cret@", redis.port())});
  CHECK(r.status == 0);
  r = lock_as("env-pw", {"--url", plain_url}, {{"RLOCK_PASSWORD", "s3cret"}});
  CHECK(r.status == 0);
  r = lock_as("acl-user", {"--url", with_port("redis://alice:alicepw@", redis.port())});
  CHECK(r.status == 0);
  r = lock_as("db3", {"--url", with_port("redis://", redis.port(), "/3")},
              {{"RLOCK_PASSWORD", "s3cret"}});
  CHECK(r.status == 0);
  for (const char* name : {"url-pw", "env-pw", "acl-user"}) {
    INFO("name: " << std::string(name));
    CHECK(hash_of(redis, lock_key(name)) == json::object({{"a", "1"}}));
  }
  CHECK(redis.cmd_int({"EXISTS", lock_key("db3")}, 3) == 1);
  CHECK(redis.cmd_int({"EXISTS", lock_key("db3")}, 0) == 0);
  // A database the server refuses: 69, and nothing in database 0 (not even the clean-up's
  // record of the request given up).
  const long long in_db0 = redis.cmd_int({"DBSIZE"}, 0);
  r = lock_as("db16", {"--url", with_port("redis://", redis.port(), "/16")},
              {{"RLOCK_PASSWORD", "s3cret"}});
  CHECK(r.status == 69);
  CHECK(r.err.find("DB index is out of range") != std::string::npos);
  CHECK(redis.cmd_int({"DBSIZE"}, 0) == in_db0);

  // A password file must be private to its owner.
  const std::string pw_file = dir / "password";
  write_file(pw_file, "s3cret\n", 0600);
  r = lock_as("file-pw", {"--url", plain_url, "--password-file", pw_file});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("file-pw")) == json::object({{"a", "1"}}));
  for (unsigned mode : {0644u, 0640u, 0604u}) {
    CAPTURE(mode);
    ::chmod(pw_file.c_str(), mode);
    r = lock_as("file-pw-open", {"--url", plain_url, "--password-file", pw_file});
    CHECK(r.status == 64);
    CHECK(line_count(r.err) == 1);
  }
  r = lock_as("file-missing", {"--url", plain_url, "--password-file", dir / "missing"});
  CHECK(r.status == 64);
  CHECK(redis.cmd_int({"EXISTS", lock_key("file-pw-open")}) == 0);
}

TEST_CASE("connection: unix socket with ?db=N") {
  RedisServer redis(RedisOptions{.unix_socket = true});
  REQUIRE(std::filesystem::exists(redis.socket_path()));

  auto r = rlock_raw(
      {"--url", "unix://" + redis.socket_path() + "?db=2", "lock", "sock", "--owner", "a"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(hash_of(redis, lock_key("sock"), 2) == json::object({{"a", "1"}}));
  CHECK(redis.cmd_int({"EXISTS", lock_key("sock")}, 0) == 0);

  r = rlock_raw({"--url", "unix://" + redis.socket_path(), "lock", "sock0", "--owner", "a"});
  CHECK(r.status == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("sock0")}, 0) == 1);

  r = rlock_raw({"--url", "unix://" + redis.socket_path() + "?db=2", "exec", "sock", "--owner", "b",
                 "--", "true"});
  CHECK(r.status == 75);
}

// A connection whose every reply was read ends with a reset, not an orderly close: the
// server has nothing left to do for it, and this host keeps no TIME_WAIT (a minute each;
// five for each `rlock lock` on a 5-member quorum, run in a loop). The harness's own
// connections before it are seconds old: each is counted before and after, whichever of
// those states it is in.
TEST_CASE("connection: a command whose replies were all read leaves no TIME_WAIT behind") {
  RedisServer redis(RedisOptions{.test_topology = false});
  const size_t before = closed_first_to(redis.port());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(rlock(redis, {"lock", "tw", "--owner", "o"}).status == 0);
    REQUIRE(rlock(redis, {"unlock", "tw", "--owner", "o"}).status == 0);
  }
  CHECK(closed_first_to(redis.port()) == before);
}

// Connection writes requests in RESP itself (connection.cpp): arguments that look like the
// protocol, hold a NUL, are empty or span many reads reach the server as they were.
TEST_CASE("connection: arguments reach the server byte for byte") {
  RedisServer redis;
  redis::Connection conn = redis::Connection::open(options_for(redis));
  const std::vector<std::string> values = {"", std::string("\0", 1),
                                           std::string("a\r\n$3\r\nb\0*2\r\n", 13),
                                           std::string(200000, 'x') + "\r\n"};
  for (size_t i = 0; i < values.size(); ++i) {
    CAPTURE(i);
    const std::string key = "k\r\n*1\r\n" + std::to_string(i);
    REQUIRE(conn.command({"SET", key, values[i]})->type == REDIS_REPLY_STATUS);
    redis::ReplyPtr got = conn.command({"GET", key});
    REQUIRE(got->type == REDIS_REPLY_STRING);
    CHECK(std::string(got->str, got->len) == values[i]);
  }
  CHECK(redis.cmd_int({"DBSIZE"}) == static_cast<long long>(values.size()));
}

}  // namespace
}  // namespace rlock::test
