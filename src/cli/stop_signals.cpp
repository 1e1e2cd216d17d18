#include "cli/stop_signals.hpp"

namespace rlock::cli {

prim::WaitHooks StopSignals::attach(prim::WaitHooks hooks) {
  hooks.interrupt_fd = signals_.fd();
  hooks.should_stop = [this] { return stop_signal() != 0; };
  return hooks;
}

int StopSignals::stop_signal() {
  while (auto s = signals_.next()) {
    if (exec::is_forwarded(*s)) stop_signal_ = *s;
  }
  return stop_signal_;
}

}  // namespace rlock::cli
