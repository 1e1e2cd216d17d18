#include "redis/wait_interrupt.hpp"

namespace rlock::redis {
namespace {
thread_local int current = -1;
}  // namespace

WaitInterrupt::WaitInterrupt(int fd) : previous_(current) { current = fd; }

WaitInterrupt::~WaitInterrupt() { current = previous_; }

int WaitInterrupt::fd() { return current; }

}  // namespace rlock::redis
