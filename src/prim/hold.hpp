#pragma once

#include <string>
#include <vector>

#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

// What a successful acquisition of any primitive hands to whoever keeps it (exec's
// watchdog): renew it, release it, and know until when it is certainly still ours. A lock,
// a read hold or a semaphore permit are supervised the same way through it.
class Hold {
 public:
  virtual ~Hold() = default;

  enum class Renewed { kHeld, kLost };
  // Extends the lease iff the hold is still ours. kLost: it is gone (expired, forced,
  // deleted); lost_reason() says which. Throws UnavailableError when Redis did not answer
  // (the hold may still be ours until deadline()).
  virtual Renewed renew() = 0;

  enum class Released { kReleased, kNotHeld };
  // Gives the hold back; `keep` > 0 keeps the object busy that much longer (--min-hold).
  // Idempotent: a retry after a lost reply still says kReleased. Throws UnavailableError.
  virtual Released release(Millis keep) = 0;

  // How the job run under the hold ended (rlock's exit code for it: 0 = success), told
  // just before release(). Default: ignored, a lock or permit is released the same way
  // either way; a queue item's lease acknowledges the item on 0 and gives it back otherwise.
  virtual void job_ended(int /*exit_code*/) {}
  // No job ran under the hold (it came too late to start one), told just before release().
  // Default: ignored; a queue item's lease gives the item back without counting the
  // delivery.
  virtual void job_not_started() {}

  // After renew() said kLost and the job run under the hold is dead: gives back what part
  // of the hold may still be ours (a MultiHold's other members, which would otherwise keep
  // their locks for a lease). Default: nothing, a lost hold is gone. Never throws.
  virtual void give_back_rest() noexcept {}

  // After renew() said kLost: whether the hold was cancelled by a newer request
  // (--cancel-running) rather than lost. Default: never.
  virtual bool cancelled() const { return false; }

  // Channels on which any message tells the holder that the hold may have been taken from
  // it on the server (unlock --force, --cancel-running): the watchdog renews at once to
  // find out instead of at its next renewal. Default: none.
  virtual std::vector<std::string> watch_channels() const { return {}; }

  // Why the hold was lost, for one line on stderr.
  virtual std::string lost_reason() const = 0;

  // From this moment on (boot clock) the server may have expired the hold: the send time
  // of the last request that took or renewed it, plus its lease.
  Deadline deadline() const { return deadline_; }
  Millis lease() const { return lease_; }
  long long fence() const { return fence_; }

 protected:
  Hold(Millis lease, long long fence, Deadline deadline)
      : lease_(lease), fence_(fence), deadline_(deadline) {}
  Millis lease_;
  long long fence_;
  Deadline deadline_;
};

}  // namespace rlock::prim
