#pragma once

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "exec/fd.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"

namespace rlock::exec {

// A timerfd on CLOCK_BOOTTIME: it becomes readable at the deadline even if the host was
// suspended in between (a poll timeout, on the monotonic clock, would wait the whole
// interval again after a resume). It is armed with relative times: an absolute time is
// what time-faking preloads (libfaketime) rewrite, into a time the kernel refuses. Move-only.
class BootTimer {
 public:
  BootTimer() : fd_(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK)) {
    if (fd_.get() < 0) throw Error(71, std::string("timerfd_create: ") + std::strerror(errno));
  }

  int fd() const { return fd_.get(); }
  // Readable from `at` on (at once if it has passed); Deadline::max() disarms. Re-arming
  // discards a pending expiry. Returns 0, or the errno of a timer that could not be armed
  // (then nothing will wake its reader: whoever depends on it must act without it).
  [[nodiscard]] int arm(Deadline at) {
    itimerspec spec{};
    if (at != Deadline::max()) spec.it_value = relative_timespec(at - SteadyClock::now());
    return timerfd_settime(fd_.get(), 0, &spec, nullptr) == 0 ? 0 : errno;
  }
  // Consumes a pending expiry, if any.
  void clear() {
    std::uint64_t n;
    (void)!read(fd_.get(), &n, sizeof n);
  }

 private:
  Fd fd_;
};

}  // namespace rlock::exec
