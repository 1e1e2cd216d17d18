#pragma once

#include "exec/signals.hpp"
#include "prim/wait.hpp"

namespace rlock::cli {

// INT, TERM, HUP and QUIT, diverted to a signal fd for as long as this lives, so that they
// end a wait (exit 128+N) instead of killing rlock in it: the wait leaves its queue, gives
// back what was granted meanwhile and takes its status line down, and one line says so. A
// killed waiter would leave its queue entry, and a grant made to it, for the next waiter
// to wait out (the claim window).
class StopSignals {
 public:
  // `hooks` with the wait ended by a stop signal (any other wake-up of the fd, such as an
  // inherited child's SIGCHLD, does not end it).
  prim::WaitHooks attach(prim::WaitHooks hooks);
  // The stop signal that came (0: none yet); drains the fd.
  int stop_signal();
  // Records a signal forwarded to a job as the stop signal.
  void forwarded(int signo) { stop_signal_ = signo; }

  exec::SignalFd& fd() { return signals_; }

 private:
  exec::SignalFd signals_;
  int stop_signal_ = 0;
};

}  // namespace rlock::cli
