#include "util/yield_to_server.hpp"

#include <sched.h>

namespace rlock {

// A failed yield (it cannot fail on Linux) would only cost the hand-off some speed.
YieldToServer::~YieldToServer() { (void)sched_yield(); }

}  // namespace rlock
