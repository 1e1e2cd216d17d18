#pragma once

namespace rlock {

// For a request whose reply comes with a hand-over (a release that grants the next waiter,
// a count-down that opens a latch): when it goes out of scope, just after the reply was
// read, the calling thread yields its CPU once, so that a server it preempted finishes the
// turn that hands the object over before rlock goes on with its clean-up and exit.
//
// Why: Redis answers the request and publishes the hand-over in one turn of its event loop,
// but writes the reply first. When Redis and rlock share a CPU (a task is woken where its
// waker runs), the reply's wake-up preempted Redis before it wrote the hand-over, and the
// next waiter waited for rlock's whole clean-up and exit: 0.4 ms of a 2 ms hand-off in a
// `perf record` of sched and syscall events.
//
// It used to run the request as SCHED_IDLE instead, which avoids the preemption itself but
// starves: an unprivileged process cannot leave SCHED_IDLE, and beside a busy process on
// its CPU an idle-policy rlock waited 150-340 ms to be run at all. One yield costs a
// context switch or two when the CPU is shared, and nothing else: the scheduling policy is
// left as it is.
class YieldToServer {
 public:
  YieldToServer() = default;
  ~YieldToServer();
  YieldToServer(const YieldToServer&) = delete;
  YieldToServer& operator=(const YieldToServer&) = delete;
};

}  // namespace rlock
