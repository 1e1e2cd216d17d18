#pragma once

namespace rlock {

// For a request whose reply comes with a hand-over (a release that grants the next waiter,
// a count-down that opens a latch): while alive, the calling thread runs as SCHED_IDLE, so
// that the wake-up of the reply never preempts another task on its CPU.
//
// Why: Redis answers the request and publishes the hand-over in one turn of its event loop,
// but writes the reply first. When Redis and rlock share a CPU (a task is woken where its
// waker runs), the reply's wake-up preempted Redis before it wrote the hand-over, and the
// next waiter waited for rlock's whole clean-up and exit: 0.4 ms of a 2 ms hand-off in a
// `perf record` of sched and syscall events. As SCHED_IDLE, rlock runs once Redis sleeps.
//
// The policy is given back when the destructor may (root, or RLIMIT_NICE allowing the nice
// value); otherwise it stays, which only slows what is left of a process that has let go of
// its hold and is about to exit. Real-time policies are left alone.
class YieldToServer {
 public:
  YieldToServer();
  ~YieldToServer();
  YieldToServer(const YieldToServer&) = delete;
  YieldToServer& operator=(const YieldToServer&) = delete;

 private:
  int policy_ = -1;  // the policy to give back; -1: nothing to give back
};

}  // namespace rlock
