// The semaphore primitive through the library (no CLI), against a real redis-server.
#include <doctest/doctest.h>

#include <thread>

#include "harness.hpp"
#include "lib_util.hpp"
#include "prim/semaphore.hpp"
#include "util/error.hpp"

using namespace rlock;
using namespace rlock::test;

namespace {

using Fixture = LibFixture;

prim::PermitRequest request(const std::string& owner, long long capacity, long long count = 1) {
  prim::PermitRequest r;
  r.owner = owner;
  r.capacity = capacity;
  r.count = count;
  return r;
}

const prim::PermitsHeld& permits(const prim::PermitAcquisition& a) {
  REQUIRE(std::holds_alternative<prim::PermitsHeld>(a));
  return std::get<prim::PermitsHeld>(a);
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "a wait that runs out leaves no queue entry nor reservation behind") {
  prim::Semaphore sem(conn, layout, "w");
  auto held = permits(sem.acquire(request("a", 2, 2), in(Millis(0))));
  CHECK(held.ids.size() == 2);
  auto busy = sem.acquire(request("b", 2), in(Millis(300)));
  REQUIRE(std::holds_alternative<prim::PermitsBusy>(busy));
  CHECK(std::get<prim::PermitsBusy>(busy).in_use == 2);
  CHECK(server.cmd_int({"ZCARD", "rlock:sem:{w}:waiters"}) == 0);
  CHECK(server.cmd_int({"ZCARD", "rlock:sem:{w}:grants"}) == 0);
  auto state = prim::read_semaphore(conn, layout, "w");
  CHECK(state.capacity == 2);
  CHECK(state.permits.size() == 2);
  CHECK(state.waiters.empty());
}

TEST_CASE_FIXTURE(Fixture, "a hold renews all its permits in one call and is lost with any one") {
  prim::Semaphore sem(conn, layout, "h");
  prim::PermitRequest req = request("a", 3, 2);
  req.lease = Millis(5'000);
  auto held = permits(sem.acquire(req, in(Millis(0))));
  auto hold = sem.hold(held, Millis(60'000));
  CHECK(hold->renew() == prim::Hold::Renewed::kHeld);
  for (const auto& p : prim::read_semaphore(conn, layout, "h").permits)
    CHECK(p.lease_left > Millis(50'000));
  CHECK(sem.release({held.ids[1]}).released == 1);
  CHECK(hold->renew() == prim::Hold::Renewed::kLost);
  CHECK(hold->lost_reason().find(held.ids[1]) != std::string::npos);
  // The permit left is not renewed either, and not re-acquired.
  CHECK(sem.renew({held.ids[1]}, Millis(1000)) == std::vector<std::string>{held.ids[1]});
  CHECK(server.cmd_int({"ZCARD", "rlock:sem:{h}"}) == 1);
  CHECK(hold->release(Millis(0)) == prim::Hold::Released::kNotHeld);
  CHECK(hold->release(Millis(0)) == prim::Hold::Released::kReleased);  // a retry: already done
  CHECK(server.cmd_int({"ZCARD", "rlock:sem:{h}"}) == 0);
}

TEST_CASE_FIXTURE(Fixture, "a waiter queued for permits is handed them by a release") {
  prim::Semaphore sem(conn, layout, "q");
  auto held = permits(sem.acquire(request("a", 1), in(Millis(0))));
  prim::PermitAcquisition got;
  std::thread waiter([&] {
    redis::Topology own = topology_for(server);
    prim::Semaphore mine(own, layout, "q");
    got = mine.acquire(request("b", 1), in(Millis(20'000)));
  });
  REQUIRE(poll_until([&] { return server.cmd_int({"ZCARD", "rlock:sem:{q}:waiters"}) == 1; }, 10s));
  CHECK(sem.release(held.ids).released == 1);
  waiter.join();
  CHECK(permits(got).ids.size() == 1);
  auto state = prim::read_semaphore(conn, layout, "q");
  REQUIRE(state.permits.size() == 1);
  CHECK(state.permits[0].owner == "b");
}
