#pragma once

#include <functional>
#include <string>
#include <vector>

#include "redis/topology.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

// What a blocking primitive offers the one waiting loop that all of them share.
class Waitable {
 public:
  enum class Mode {
    kTry,     // one attempt, not queued
    kWait,    // first attempt of a wait: queue when busy
    kQueued,  // later attempts: claim a grant, keep the place in the queue
    kLast,    // the wait's final attempt: leave the queue when busy
    kClaim,   // as kQueued while the wait's queue entry is there; without it (lost with
              // the server's data) only claims a grant, never takes what is free
  };
  struct Step {
    bool acquired = false;
    Millis holder_ttl{-1};  // busy: when the holders' expiry frees it; -1 = no expiry
    std::string holders;    // busy: who holds it, for -v
    std::string summary;    // busy: who holds it or what is missing, briefly: "held by ci-4"
    long long ahead = -1;   // busy and queued: waiters before this one; -1 = not known
    // For the status line: false when holder_ttl is no holder's lease (a queue's recheck),
    // and when a queue's next item is due (-1: none, or not a queue).
    bool ttl_is_lease = true;
    Millis due_in{-1};
    // The wait ends here, acquired or not (a lock wait superseded by a newer one).
    bool ended = false;
    // Busy, of a wait for any of several objects (a pool): the holders' expiry that frees
    // the last of them, where holder_ttl is the first's; -1 = as holder_ttl.
    Millis last_ttl{-1};
  };
  virtual ~Waitable() = default;

  // One attempt (one script, one round trip). Throws what the topology throws.
  virtual Step attempt(Mode mode, Millis wait_left) = 0;
  // [0] the object's release channel, [1] this wait's own grant channel (a wait for any of
  // several objects: those two of each, in turn). Channels of several hash tags are
  // subscribed to on each tag's server (Topology::subscribe).
  virtual std::vector<std::string> channels() const = 0;
  // Whether a "changed <ms>" on `channel` tells this wait when what it waits for frees
  // (it shortens the sleep, no attempt): its own channels, [0] and [1] of channels().
  virtual bool announces_on(const std::string& channel) const {
    const auto own = channels();
    return channel == own[0] || (own.size() > 1 && channel == own[1]);
  }
  // Channels another client publishes on with classic PUBLISH (Redisson's lock channel),
  // listened to as well: any message there is a wake-up too.
  virtual std::vector<std::string> classic_channels() const { return {}; }
  // Gives back whatever this request may hold or have been granted and leaves the queue,
  // also when the request's own reply never came; never throws.
  virtual void give_up() noexcept = 0;
};

// The word the primitives' scripts take for a mode ("try", "wait", "queued", "last").
const char* mode_word(Waitable::Mode mode);

// The mode an attempt goes out in when it is resent on another connection than its first
// send's (Topology::run's resend_args): the server there may have lost the queue entry and
// the hold before it (a failover, a restart), so a waiter's attempt is a reconnected
// waiter's claim (Mode::kClaim); a try stays a try.
Waitable::Mode resend_mode(Waitable::Mode mode);
// `args` with the mode word at `at` replaced by resend_mode(mode)'s.
std::vector<std::string_view> resent_args(std::vector<std::string_view> args, size_t at,
                                          Waitable::Mode mode);
// Whether an attempt in `mode` comes after its wait queued (kQueued, kLast, kClaim): it
// may well take nothing, so --sync-replicas judges it by what it took (redis::Acks::
// judged_by_reply), and a master short of replicas does not end the wait.
bool after_queueing(Waitable::Mode mode);

// A duration as a script argument: whole milliseconds, never negative.
std::string millis_arg(Millis d);

// The clean-up of a Waitable::give_up: `script` runs on the command connection within
// what is left of the budget of the request that failed (Topology::cleanup_until), or, when
// that fails or nothing is left, is handed to a connection of its own
// (Topology::send_cleanup): --timeout bounds the request and its clean-up together.
void clean_up(redis::Topology& topology, const redis::Script& script,
              const std::vector<std::string_view>& keys,
              const std::vector<std::string>& args) noexcept;

// Optional collaborators of a blocking acquisition.
struct WaitHooks {
  int interrupt_fd = -1;  // readable -> ask should_stop
  // Called when interrupt_fd is readable; true ends the wait (INT/TERM/HUP/QUIT), false
  // goes on waiting (any other wake-up of the fd, e.g. an inherited child's SIGCHLD).
  std::function<bool()> should_stop;
  // Called before each sleep with the current attempt's result and the time left to wait.
  std::function<void(const Waitable::Step& busy, Millis wait_left)> on_wait;
  // Called when the connection dropped during the wait and rlock reconnects.
  std::function<void(const std::string& why)> on_reconnect;
  // Called once when wait_for returns or throws, before its caller sees the outcome (and
  // before a job starts): what on_wait showed can be taken down.
  std::function<void()> on_done;
  // Called every `tick_every` (when > 0) while the wait sleeps or pauses between
  // reconnections, for what must go on meanwhile: a MultiLock renews the locks it already
  // holds while it waits for the next one. false ends the wait as a stop signal does
  // (kInterrupted, the request given up).
  Millis tick_every{0};
  std::function<bool()> on_tick;
};

// kEnded: an attempt said the wait is over (Waitable::Step::ended); the request was given up.
enum class WaitOutcome { kAcquired, kTimedOut, kInterrupted, kEnded };

// Attempts, and until `until` queues and sleeps on pub/sub: a release hands the object to
// the longest-waiting live waiter on its grant channel, and the waiter claims it with an
// attempt (a message is a wake-up, never proof). Without a message it retries when the
// holders' expiry (as last seen, or as announced on the release channel) frees it. A
// dropped connection reconnects and keeps the waiter's place. For the longest holders'
// expiry seen in the wait after that, a waiter whose queue entry the server no longer has
// only claims grants (Mode::kClaim) and takes nothing free: a server that lost the entry (a
// failover before it was replicated, a restart without persistence) may have lost a hold
// written before it, whose job runs until its holder finds out at its next renewal, or
// until its lease ends. On an error, an interrupt
// or at the deadline nothing is left behind: a hold granted meanwhile is given back.
WaitOutcome wait_for(redis::Topology& topology, Waitable& w, Deadline until,
                     const WaitHooks& hooks);

}  // namespace rlock::prim
