#include "exec/watchdog.hpp"

#include <algorithm>

#include "exec/stop_policy.hpp"
#include "util/error.hpp"

namespace rlock::exec {
namespace {

// While Redis is unreachable, retry this often (but never past the stop point).
constexpr Millis kRetryInterval{250};

}  // namespace

Watchdog::Watchdog(redis::Connection conn, const prim::KeyLayout& layout, std::string name,
                   std::string owner, Millis lease, Deadline acquired_at)
    : options_(conn.options()),
      conn_(std::move(conn)),
      layout_(layout),
      name_(std::move(name)),
      owner_(std::move(owner)),
      lease_(lease),
      lease_deadline_(acquired_at + lease),
      next_due_(acquired_at + lease / 3) {}

void Watchdog::stop_before_deadline(Millis lead) {
  stop_lead_ = lead;
  next_due_ = std::min(next_due_, lease_deadline_ - lease_ + renew_interval());
}

Millis Watchdog::renew_interval() const { return exec::renew_interval(lease_, stop_lead_); }

prim::Lock& Watchdog::lock() {
  if (!conn_ || conn_->broken()) {
    lock_.reset();
    conn_.reset();
    auto opts = options_;
    // Connecting, AUTH and SELECT must all end before the stop point.
    Millis left = std::max(millis_until(stop_at()), Millis(1));
    opts.connect_timeout = std::min(opts.connect_timeout, left);
    opts.command_timeout = std::min(opts.command_timeout, left);
    conn_.emplace(redis::Connection::open(opts));
  }
  if (!lock_) lock_.emplace(*conn_, layout_, name_);
  return *lock_;
}

Watchdog::State Watchdog::tick() {
  Deadline now = SteadyClock::now();
  if (now >= stop_at()) {
    lost_reason_ = last_error_.empty()
                       ? "no renewal was confirmed before the job had to be stopped (rlock was "
                         "paused, stopped or suspended)"
                       : "redis stayed unreachable until the job had to be stopped: " + last_error_;
    return State::kLost;
  }
  if (now < next_due_) return State::kHeld;
  try {
    auto& l = lock();
    conn_->set_timeout(std::clamp(millis_until(stop_at()), Millis(1), options_.command_timeout));
    if (l.renew(owner_, lease_)) {
      lease_deadline_ = now + lease_;
      next_due_ = now + renew_interval();
      last_error_.clear();
      return State::kHeld;
    }
    lost_reason_ = "the lock is no longer held by " + owner_ + " (expired, deleted or forced)";
    return State::kLost;
  } catch (const Error& e) {
    // Drop the connection now: a renewal that timed out must not sit in a socket that the
    // server may still read and run after the lock was given up.
    lock_.reset();
    conn_.reset();
    last_error_ = e.what();
    if (SteadyClock::now() >= stop_at()) {
      lost_reason_ = "redis stayed unreachable until the job had to be stopped: " + last_error_;
      return State::kLost;
    }
    lost_reason_ = e.what();
    next_due_ = std::min(SteadyClock::now() + kRetryInterval, stop_at());
    return State::kUnreachable;
  }
}

Watchdog::Released Watchdog::release(Millis keep, std::string* why) {
  try {
    auto& l = lock();
    conn_->set_timeout(options_.command_timeout);
    auto r = l.release(owner_, keep);
    if (r.held) return Released::kReleased;
    if (why)
      *why = "it was no longer held by " + owner_ + " (held by " +
             std::to_string(r.holders.size()) + " other owner(s))";
    return Released::kNotHeld;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return Released::kUnreachable;
  }
}

}  // namespace rlock::exec
