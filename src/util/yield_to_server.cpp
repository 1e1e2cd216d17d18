#include "util/yield_to_server.hpp"

#include <sched.h>

namespace rlock {

YieldToServer::YieldToServer() {
  int policy = sched_getscheduler(0);
  if (policy != SCHED_OTHER && policy != SCHED_BATCH) return;
  sched_param param{};
  if (sched_setscheduler(0, SCHED_IDLE, &param) == 0) policy_ = policy;
}

YieldToServer::~YieldToServer() {
  if (policy_ < 0) return;
  sched_param param{};
  sched_setscheduler(0, policy_, &param);  // EPERM without CAP_SYS_NICE or RLIMIT_NICE: stays
}

}  // namespace rlock
