// exec while it waits: what may and may not end the wait.
#include <doctest/doctest.h>

#include "harness.hpp"

namespace t = rlock::test;
using namespace std::chrono_literals;

TEST_CASE("exec: a child rlock inherited that exits does not end the wait") {
  t::RedisServer server;
  REQUIRE(t::rlock(server, {"lock", "inherit", "--owner", "holder", "--lease", "1500ms"}).status ==
          0);
  // The shell's background sleep becomes rlock's child through exec; its SIGCHLD arrives
  // while rlock waits for the lock.
  std::string script = "sleep 0.2 & exec \"$0\" --url \"$1\" exec --wait 10s inherit -- echo ran";
  auto r = t::run({"sh", "-c", script, t::rlock_binary(), server.url()});
  CHECK(r.status == 0);
  CHECK(r.out == "ran\n");
  CHECK(r.elapsed.count() >= 1000);
}
