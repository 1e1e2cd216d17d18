#include "prim/wait.hpp"

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "redis/errors.hpp"
#include "util/error.hpp"

namespace rlock::prim {
namespace {

using redis::Subscriber;

// A waiter woken by the holders' expiry retries a little after it, so that the key has
// really expired on the server when it asks.
constexpr Millis kExpirySlack{2};
// Between reconnection attempts while Redis is unreachable during a wait.
constexpr Millis kReconnectMin{50};
constexpr Millis kReconnectMax{1000};

// "changed <ms>": the holders' expiry is now at most <ms> away. A release or grant tells
// it to the waiter that must look again then (the next in line) on its own grant channel,
// not to every waiter on the release channel (as releases of older versions still do).
std::optional<Millis> announced_expiry(const std::string& payload) {
  constexpr std::string_view kChanged = "changed ";
  if (payload.rfind(kChanged, 0) != 0) return std::nullopt;
  char* end = nullptr;
  long long ms = std::strtoll(payload.c_str() + kChanged.size(), &end, 10);
  if (*end != '\0' || ms < 0) return std::nullopt;
  return Millis(ms);
}

// Only an availability problem (not a refusal about data) is worth waiting out.
bool transient(const Error& e) { return e.exit_code() == kExitUnavailable; }

class Loop {
 public:
  Loop(redis::Topology& t, Waitable& w, Deadline until, const WaitHooks& h)
      : topology_(t), w_(w), until_(until), hooks_(h) {}

  WaitOutcome run() {
    next_tick_ = SteadyClock::now() + hooks_.tick_every;
    Waitable::Step step = attempt(Waitable::Mode::kTry, Millis(0));
    if (step.acquired) return WaitOutcome::kAcquired;
    if (SteadyClock::now() >= until_) return WaitOutcome::kTimedOut;
    // Subscribe before queueing, so that no grant or release can be missed.
    longest_ttl_ = std::max(step.holder_ttl, step.last_ttl);
    sub_.emplace(topology_.subscribe(w_.channels(), w_.classic_channels()));
    step = attempt(Waitable::Mode::kWait, millis_until(until_));
    while (!step.acquired) {
      if (step.ended) return finish_ended();
      if (SteadyClock::now() >= until_) {
        return finish(SteadyClock::now() < claim_only_until_ ? Waitable::Mode::kClaim
                                                             : Waitable::Mode::kLast);
      }
      longest_ttl_ = std::max({longest_ttl_, step.holder_ttl, step.last_ttl});
      wake_ = until_;
      if (step.holder_ttl.count() >= 0)
        wake_ = std::min(until_, SteadyClock::now() + step.holder_ttl + kExpirySlack);
      if (SteadyClock::now() < claim_only_until_) wake_ = std::min(wake_, claim_only_until_);
      if (hooks_.on_wait) hooks_.on_wait(step, millis_until(until_));
      if (!sleep()) return finish_interrupted();
      step = attempt_resilient(SteadyClock::now() < claim_only_until_ ? Waitable::Mode::kClaim
                                                                      : Waitable::Mode::kQueued);
    }
    return acquired();
  }

 private:
  // Sleeps until something may have changed; false when interrupted for good.
  bool sleep() {
    while (true) {
      Subscriber::Event event;
      try {
        event = sub_->wait(ticking() ? std::min(wake_, next_tick_) : wake_, hooks_.interrupt_fd);
      } catch (const redis::IoError& e) {
        resubscribe(e.what());
        return true;  // what was published meanwhile is lost: look again
      }
      switch (event.wake) {
        case Subscriber::Wake::kTimeout:
          if (ticking() && SteadyClock::now() >= next_tick_) {
            if (!tick()) return false;
            if (SteadyClock::now() < wake_) continue;
          }
          return true;
        case Subscriber::Wake::kResubscribed:
          return true;  // look again: what that server published meanwhile was missed
        case Subscriber::Wake::kInterrupted:
          if (!hooks_.should_stop || hooks_.should_stop()) return false;
          continue;
        case Subscriber::Wake::kMessage:
          if (auto ms = announced_expiry(event.payload); ms && w_.announces_on(event.channel)) {
            wake_ = std::min(wake_, SteadyClock::now() + *ms + kExpirySlack);
            continue;
          }
          return true;
      }
    }
  }

  // After a reconnect, for the longest holders' expiry seen: only claim grants (see wait_for).
  void reconnected() {
    if (longest_ttl_.count() > 0) {
      claim_only_until_ =
          std::max(claim_only_until_, SteadyClock::now() + longest_ttl_ + kExpirySlack);
    }
  }

  // A dropped subscriber comes back as soon as Redis does, within the wait's time.
  void resubscribe(const std::string& why) {
    reconnected();
    if (hooks_.on_reconnect) hooks_.on_reconnect(why);
    sub_.reset();
    Millis pause = kReconnectMin;
    while (true) {
      try {
        sub_.emplace(topology_.subscribe(w_.channels(), w_.classic_channels()));
        return;
      } catch (const Error& e) {
        if (!transient(e) || SteadyClock::now() >= until_) throw;
      }
      pause_for(pause);
      pause = std::min(pause * 2, kReconnectMax);
    }
  }

  // One attempt; one the topology resent on another connection (a failover, a lost
  // connection) makes this wait a reconnected one from then on.
  Waitable::Step attempt(Waitable::Mode mode, Millis wait_left) {
    const unsigned long long resends = topology_.resends();
    struct Judge {
      Loop& loop;
      unsigned long long before;
      ~Judge() {
        if (loop.topology_.resends() != before) loop.reconnected();
      }
    } judge{*this, resends};
    return w_.attempt(mode, wait_left);
  }

  // An attempt that survives Redis going away for a while: the request is idempotent (its
  // id makes a repeat of an executed attempt report what it took), so it is repeated.
  Waitable::Step attempt_resilient(Waitable::Mode mode) {
    Millis pause = kReconnectMin;
    while (true) {
      try {
        return attempt(mode, millis_until(until_));
      } catch (const Error& e) {
        // A short acknowledgement (--sync-replicas) is an answer, not an outage.
        bool answered = dynamic_cast<const redis::ReplicationError*>(&e) != nullptr;
        if (answered || !transient(e) || SteadyClock::now() >= until_) throw;
        reconnected();
        if (mode == Waitable::Mode::kQueued) mode = Waitable::Mode::kClaim;
        if (hooks_.on_reconnect) hooks_.on_reconnect(e.what());
      }
      pause_for(pause);
      pause = std::min(pause * 2, kReconnectMax);
      if (!sub_) resubscribe("no subscription");
    }
  }

  bool ticking() const { return hooks_.tick_every.count() > 0 && hooks_.on_tick; }

  // Runs the tick hook and schedules the next one; false: the hook ends the wait.
  bool tick() {
    bool go_on = hooks_.on_tick();
    next_tick_ = SteadyClock::now() + hooks_.tick_every;
    return go_on;
  }

  // Waits `d` (never past the wait's end) unless a stop signal comes first; ticks meanwhile.
  void pause_for(Millis d) {
    Deadline end = std::min(SteadyClock::now() + d, until_);
    while (SteadyClock::now() < end) {
      Deadline wake = ticking() ? std::min(end, next_tick_) : end;
      pollfd p{hooks_.interrupt_fd, POLLIN, 0};
      int n =
          poll(&p, hooks_.interrupt_fd >= 0 ? 1 : 0, static_cast<int>(millis_until(wake).count()));
      if (n > 0 && (!hooks_.should_stop || hooks_.should_stop())) throw Interrupted{};
      if (ticking() && SteadyClock::now() >= next_tick_ && !tick()) throw Interrupted{};
    }
  }

  WaitOutcome finish(Waitable::Mode mode) {
    const Waitable::Step last = attempt(mode, Millis(0));
    if (last.acquired) return acquired();
    return last.ended ? finish_ended() : WaitOutcome::kTimedOut;
  }

  // The wait is over by the server's word: nothing more is asked, and nothing is left.
  WaitOutcome finish_ended() {
    w_.give_up();
    if (sub_) topology_.retire(std::move(*sub_));
    sub_.reset();
    return WaitOutcome::kEnded;
  }

  // The subscription is closed later (Topology::retire), off the way to the job's start.
  WaitOutcome acquired() {
    if (sub_) topology_.retire(std::move(*sub_));
    sub_.reset();
    return WaitOutcome::kAcquired;
  }

  WaitOutcome finish_interrupted() {
    w_.give_up();
    return WaitOutcome::kInterrupted;
  }

 public:
  struct Interrupted {};

 private:
  redis::Topology& topology_;
  Waitable& w_;
  Deadline until_;
  const WaitHooks& hooks_;
  std::optional<Subscriber> sub_;
  Deadline wake_{};
  Deadline next_tick_{};
  Millis longest_ttl_{-1};       // the longest holders' expiry an attempt reported
  Deadline claim_only_until_{};  // see reconnected()
};

}  // namespace

const char* mode_word(Waitable::Mode mode) {
  switch (mode) {
    case Waitable::Mode::kTry:
      return "try";
    case Waitable::Mode::kWait:
      return "wait";
    case Waitable::Mode::kQueued:
      return "queued";
    case Waitable::Mode::kLast:
      return "last";
    case Waitable::Mode::kClaim:
      return "claim";
  }
  return "try";
}

void clean_up(redis::Topology& topology, const redis::Script& script,
              const std::vector<std::string_view>& keys,
              const std::vector<std::string>& args) noexcept {
  Deadline until = topology.cleanup_until();
  if (SteadyClock::now() < until) {
    try {
      topology.run(script, keys, std::vector<std::string_view>(args.begin(), args.end()),
                   redis::Retry::kIdempotent, until);
      return;
    } catch (const std::exception&) {
      // Redis did not answer: hand the clean-up over on a connection of its own below.
    }
  }
  topology.send_cleanup(script, std::vector<std::string>(keys.begin(), keys.end()), args,
                        std::max(millis_until(until), Millis(0)));
}

Waitable::Mode resend_mode(Waitable::Mode mode) {
  return mode == Waitable::Mode::kTry ? mode : Waitable::Mode::kClaim;
}

std::vector<std::string_view> resent_args(std::vector<std::string_view> args, size_t at,
                                          Waitable::Mode mode) {
  args.at(at) = mode_word(resend_mode(mode));
  return args;
}

bool after_queueing(Waitable::Mode mode) {
  return mode != Waitable::Mode::kTry && mode != Waitable::Mode::kWait;
}

std::string millis_arg(Millis d) { return std::to_string(std::max<long long>(d.count(), 0)); }

WaitOutcome wait_for(redis::Topology& topology, Waitable& w, Deadline until,
                     const WaitHooks& hooks) {
  struct Done {
    const WaitHooks& hooks;
    ~Done() {
      if (hooks.on_done) hooks.on_done();
    }
  } done{hooks};
  Loop loop(topology, w, until, hooks);
  try {
    return loop.run();
  } catch (const Loop::Interrupted&) {
    w.give_up();
    return WaitOutcome::kInterrupted;
  } catch (const Error& e) {
    // Whatever the request may have taken or been granted must not outlive it: after a
    // lost connection, or on a quorum a refusal that only some members made (the others may
    // have granted it). Elsewhere a refusal changed nothing, and a usage error was found
    // before anything was sent.
    if (transient(e) || (!topology.quorum_members().empty() && e.exit_code() != kExitUsage))
      w.give_up();
    throw;
  }
}

}  // namespace rlock::prim
