#include "util/yield_to_server.hpp"

#include <doctest/doctest.h>
#include <sched.h>
#include <unistd.h>

// The releaser is SCHED_IDLE only while its request is out; a process that may leave
// SCHED_IDLE (root here, or RLIMIT_NICE) is given its policy back, and a real-time one is
// never touched.
TEST_CASE("YieldToServer: SCHED_IDLE while alive, the policy back afterwards") {
  REQUIRE(sched_getscheduler(0) == SCHED_OTHER);
  {
    rlock::YieldToServer yield;
    CHECK(sched_getscheduler(0) == SCHED_IDLE);
  }
  if (geteuid() != 0) return;  // SCHED_IDLE for good: nothing more can be tried
  CHECK(sched_getscheduler(0) == SCHED_OTHER);

  sched_param batch{};
  REQUIRE(sched_setscheduler(0, SCHED_BATCH, &batch) == 0);
  {
    rlock::YieldToServer yield;
    CHECK(sched_getscheduler(0) == SCHED_IDLE);
  }
  CHECK(sched_getscheduler(0) == SCHED_BATCH);
  sched_param other{};
  sched_setscheduler(0, SCHED_OTHER, &other);

  sched_param fifo{};
  fifo.sched_priority = 1;
  if (sched_setscheduler(0, SCHED_FIFO, &fifo) == 0) {
    {
      rlock::YieldToServer yield;
      CHECK(sched_getscheduler(0) == SCHED_FIFO);
    }
    CHECK(sched_getscheduler(0) == SCHED_FIFO);
    sched_setscheduler(0, SCHED_OTHER, &other);
  }
}
