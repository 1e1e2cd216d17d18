// A server's reply is data, not an order: servers that drip, loop, lie or refuse, or have
// no connection left. Every case ends in one stderr line, a documented code, and no change
// in Redis (documented_acl_test.cpp: ACL users missing rights).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <sstream>
#include <thread>

#include "documented_acl.hpp"
#include "harness.hpp"

namespace rlock::test {
namespace {

// A TCP server on 127.0.0.1 that speaks just enough RESP: each command it reads (an array
// of bulk strings) goes to `answer`, whose reply bytes are written back `drip` bytes at a
// time, `drip_pause` apart. Each connection has a thread of its own. Stops (and closes every
// connection) when destroyed.
class FakeRedis {
 public:
  using Answer = std::function<std::string(const std::vector<std::string>& argv)>;
  explicit FakeRedis(Answer answer, size_t drip = 0, std::chrono::milliseconds drip_pause = 0ms)
      : answer_(std::move(answer)), drip_(drip), pause_(drip_pause) {
    listener_ = listen_silently(&port_);
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~FakeRedis() {
    stop_ = true;
    thread_.join();
    for (auto& t : clients_) t.join();
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept(listener_.get(), nullptr, nullptr);
      if (fd >= 0) clients_.emplace_back([this, fd] { serve(Fd(fd)); });
    }
  }

  void serve(Fd fd) {
    std::string buf;
    while (!stop_) {
      pollfd p{fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char chunk[4096];
      ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
      if (n <= 0) return;
      buf.append(chunk, static_cast<size_t>(n));
      while (auto argv = take_command(buf)) {
        if (!send_reply(fd.get(), answer_(*argv))) return;
      }
    }
  }

  bool send_reply(int fd, const std::string& reply) {
    size_t step = drip_ ? drip_ : reply.size();
    for (size_t at = 0; at < reply.size() && !stop_; at += step) {
      if (::send(fd, reply.data() + at, std::min(step, reply.size() - at), MSG_NOSIGNAL) < 0)
        return false;
      if (drip_) std::this_thread::sleep_for(pause_);
    }
    return true;
  }

  // One complete "*N\r\n$L\r\narg\r\n..." command from the front of `buf`, if there is one.
  static std::optional<std::vector<std::string>> take_command(std::string& buf) {
    size_t pos = 0;
    auto line = [&]() -> std::optional<std::string> {
      size_t end = buf.find("\r\n", pos);
      if (end == std::string::npos) return std::nullopt;
      std::string l = buf.substr(pos, end - pos);
      pos = end + 2;
      return l;
    };
    auto head = line();
    if (!head || head->empty() || (*head)[0] != '*') return std::nullopt;
    std::vector<std::string> argv;
    for (int i = 0, n = std::stoi(head->substr(1)); i < n; ++i) {
      auto len = line();
      if (!len) return std::nullopt;
      size_t l = std::stoul(len->substr(1));
      if (buf.size() < pos + l + 2) return std::nullopt;
      argv.push_back(buf.substr(pos, l));
      pos += l + 2;
    }
    buf.erase(0, pos);
    return argv;
  }

  Answer answer_;
  size_t drip_;
  std::chrono::milliseconds pause_;
  int port_ = 0;
  Fd listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> clients_;  // touched by the accept thread only, until it is joined
};

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

TEST_CASE(
    "a server that drips its reply byte by byte is bounded by --timeout for the whole command") {
  FakeRedis server(
      [](const std::vector<std::string>&) {
        return std::string("*4\r\n:1\r\n:1\r\n:5\r\n:30000\r\n");
      },
      1, 400ms);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"lock", "d", "--owner", "o"}, {"exec", "-n", "d", "--", "echo", "ran"}}) {
    CAPTURE(args[0]);
    std::vector<std::string> argv{rlock_binary(), "--url", server.url(), "--timeout", "1s"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv, {}, 30s);
    CHECK(r.status == 69);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    // The command, its clean-up and the clean-up's own connection: a few timeouts, not forever.
    CHECK(r.elapsed < 8s);
  }
}

TEST_CASE("inspect stops a SCAN whose cursor never returns to 0") {
  std::atomic<long long> scans{0};
  FakeRedis server([&](const std::vector<std::string>& argv) {
    if (argv[0] == "DBSIZE") return std::string(":3\r\n");
    ++scans;
    return "*2\r\n" + bulk(std::to_string(scans.load())) + "*0\r\n";
  });
  auto r = rlock_raw({"--url", server.url(), "inspect"}, {}, 30s);
  CHECK(r.status == 65);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("SCAN") != std::string::npos);
  CHECK(scans.load() <= 1001);
}

// inspect pipelines the next SCAN call with the reads of a batch: a refusal of that call
// still ends in one line and the refusal's code, and never in a complete-looking array.
TEST_CASE("inspect: a SCAN refused half-way exits 77 with one line and no closing bracket") {
  FakeRedis server([](const std::vector<std::string>& argv) -> std::string {
    const std::string& c = argv[0];
    if (c == "DBSIZE") return ":2\r\n";
    if (c == "SCAN" && argv[1] == "0")
      return "*2\r\n" + bulk("7") + "*1\r\n" + bulk("rlock:lock:{a}");
    if (c == "SCAN") return "-NOPERM this user has no permissions to run the 'scan' command\r\n";
    if (c == "TIME") return "*2\r\n" + bulk("1700000000") + bulk("0");
    if (c == "HGETALL") return "*2\r\n" + bulk("o") + bulk("1");
    if (c == "PTTL") return ":5000\r\n";
    if (c == "ZRANGE") return "*0\r\n";
    if (c == "ZCARD") return ":0\r\n";
    return "$-1\r\n";
  });
  auto r = rlock_raw({"--url", server.url(), "inspect"}, {}, 30s);
  CHECK(r.status == 77);
  CHECK(line_count(r.err) == 1);
  CHECK(r.out.find(']') == std::string::npos);
}

// A lock whose HSCAN reply is [cursor, <not an array>]: shown with an error saying so, never
// as a lock with one holder of whom none is listed.
TEST_CASE("inspect: an HSCAN reply whose page is not an array is shown as an error") {
  for (const bool of_readers : {false, true}) {
    CAPTURE(of_readers);
    FakeRedis server([&](const std::vector<std::string>& argv) -> std::string {
      const std::string& c = argv[0];
      const bool readers = argv.size() > 1 && argv[1].find("lock-readers:") != std::string::npos;
      if (c == "DBSIZE") return ":1\r\n";
      if (c == "SCAN") return "*2\r\n" + bulk("0") + "*1\r\n" + bulk("rlock:lock:{a}");
      if (c == "TIME") return "*2\r\n" + bulk("1700000000") + bulk("0");
      if (c == "HSCAN" && readers == of_readers) return "*2\r\n" + bulk("0") + ":5\r\n";
      if (c == "HSCAN" && !readers) return "*2\r\n" + bulk("0") + "*2\r\n" + bulk("o") + bulk("1");
      if (c == "HSCAN") return "*2\r\n" + bulk("0") + "*0\r\n";
      if (c == "HLEN") return readers ? ":0\r\n" : ":1\r\n";
      if (c == "PTTL") return readers ? ":-2\r\n" : ":5000\r\n";
      if (c == "ZRANGE") return "*0\r\n";
      if (c == "ZCARD") return ":0\r\n";
      return "$-1\r\n";
    });
    auto r = rlock_raw({"--url", server.url(), "inspect"}, {}, 30s);
    INFO("stderr: " << r.err);
    CHECK(r.status == 0);
    json listed = parse_json(r.out);
    REQUIRE(listed.size() == 1);
    CHECK(listed.at(0).value("error", "") ==
          "unexpected reply from redis to HSCAN: not [cursor, [field, value...]]");
  }
}

TEST_CASE("replies of the wrong shape or absurd length end in one line and a documented code") {
  const std::vector<std::pair<std::string, int>> cases = {
      {"+OK\r\n", 65},                           // a status where an array should be
      {"*1\r\n:1\r\n", 65},                      // an array too short
      {"$99999999999999999999\r\n", 69},         // a length hiredis refuses: protocol error
      {"-MOVED 3999 127.0.0.1:6381\r\n", 69},    // cluster redirection
      {"-LOADING loading the dataset\r\n", 69},  // server starting
      {"-ERR max number of clients reached\r\n", 69},
      {"-NOPERM this user has no permissions to run the 'evalsha' command\r\n", 77},
      {"-ERR user_script:1: Script attempted to access nonexistent global variable 'x'\r\n", 70},
      {"-ERR evil\x1b[2K\x07 text\xc2\x9b"
       "31m\r\n",
       69},  // escapes in an error text
  };
  for (const auto& [reply, code] : cases) {
    CAPTURE(reply);
    FakeRedis server([&](const std::vector<std::string>&) { return reply; });
    auto r =
        rlock_raw({"--url", server.url(), "--timeout", "1s", "lock", "x", "--owner", "o"}, {}, 30s);
    CHECK(r.status == code);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    bool printable = r.err.find('\x1b') == std::string::npos &&
                     r.err.find('\x07') == std::string::npos &&
                     r.err.find("\xc2\x9b") == std::string::npos;
    CHECK(printable);
  }
}

// The rights rlock needs, and nothing more (documented under ACL in rlock(1)).
// A client connection to `redis` that has been served (PING answered), so that it counts
// against maxclients.
Fd served_client(const RedisServer& redis) {
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(redis.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string ping = "PING\r\n";
  REQUIRE(::send(fd.get(), ping.data(), ping.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(ping.size()));
  char reply[16] = {};
  pollfd p{fd.get(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 5000) == 1);
  REQUIRE(::read(fd.get(), reply, sizeof reply - 1) > 0);
  REQUIRE(std::string(reply) == "+PONG\r\n");
  return fd;
}

// The server accepts, answers the first request with an error and closes: rlock's next
// write used to kill it with SIGPIPE (2 runs in 3), silently.
TEST_CASE("a server at maxclients: every command exits 69 with one line saying so") {
  RedisServer redis;
  redis.cmd({"CONFIG", "SET", "maxclients", "2"});
  std::vector<Fd> held;
  for (int i = 0; i < 2; ++i) held.push_back(served_client(redis));
  const std::vector<std::vector<std::string>> calls = {
      {"lock", "m"},
      {"exec", "m", "--", "echo", "ran"},
      {"sem", "acquire", "s", "--permits", "1"},
      {"limit", "x", "--rate", "1", "--per", "1s"},
      {"inspect"},
  };
  for (int round = 0; round < 4; ++round) {
    for (const auto& args : calls) {
      CAPTURE(round);
      CAPTURE(args.front());
      auto r = rlock(redis, args);
      INFO("stderr: " << r.err);
      CHECK(r.status == 69);
      CHECK(line_count(r.err) == 1);
      CHECK(r.err.find("max number of clients reached") != std::string::npos);
      CHECK(r.out.empty());
    }
  }
  held.clear();
  REQUIRE(poll_until(
      [&] {
        try {
          return redis.cmd_int({"DBSIZE"}) == 0;
        } catch (const std::exception&) {
          return false;  // the held connections are not closed on the server yet
        }
      },
      5s));
}

}  // namespace
}  // namespace rlock::test
