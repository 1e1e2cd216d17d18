#include "util/yield_to_server.hpp"

#include <doctest/doctest.h>
#include <sched.h>
#include <sys/resource.h>

#include <initializer_list>

// The releaser yields once and never changes its scheduling: SCHED_IDLE, which an
// unprivileged process cannot leave, starved it beside busy processes (issue 13).
TEST_CASE("YieldToServer: the policy and nice value stay as they are") {
  for (int policy : {SCHED_OTHER, SCHED_BATCH}) {
    sched_param param{};
    if (sched_setscheduler(0, policy, &param) != 0) continue;
    INFO("policy " << policy);
    int nice_before = getpriority(PRIO_PROCESS, 0);
    {
      rlock::YieldToServer yield;
      CHECK(sched_getscheduler(0) == policy);
      CHECK(getpriority(PRIO_PROCESS, 0) == nice_before);
    }
    CHECK(sched_getscheduler(0) == policy);
    CHECK(getpriority(PRIO_PROCESS, 0) == nice_before);
  }
  sched_param other{};
  sched_setscheduler(0, SCHED_OTHER, &other);
}
