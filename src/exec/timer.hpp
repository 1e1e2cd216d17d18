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

// A timerfd on CLOCK_BOOTTIME armed at absolute deadlines: it becomes readable at the
// deadline even if the host was suspended in between (a relative poll timeout would wait
// the whole interval again after a resume). Move-only.
class BootTimer {
 public:
  BootTimer() : fd_(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK)) {
    if (fd_.get() < 0) throw Error(71, std::string("timerfd_create: ") + std::strerror(errno));
  }

  int fd() const { return fd_.get(); }
  // Readable from `at` on; Deadline::max() disarms. Re-arming discards a pending expiry.
  void arm(Deadline at) {
    itimerspec spec{};
    if (at != Deadline::max()) spec.it_value = to_boot_timespec(at);
    timerfd_settime(fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
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
