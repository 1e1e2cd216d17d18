#pragma once

#include <algorithm>

#include "util/duration.hpp"

namespace rlock::exec {

// When a job must be stopped, relative to its lease deadline D (the send time of the last
// confirmed acquisition or renewal + the lease, on the boot clock):
//
//   stop point  = D - kill_after - margin   the job gets --on-lost (and CONT)
//   kill point  = D - margin                 the job's processes get SIGKILL
//
// so that the job is dead by the time the server can expire the lease and hand the lock to
// someone else. The margin absorbs what lies between "KILL sent" and "the server may expire
// the lease": the time the kernel takes to kill, a late wake-up of rlock or its guardian on
// a loaded host, and clock-rate differences between this host and the Redis server. It is a
// twentieth of the lease, at least 100ms and at most 1s, but never more than a tenth of the
// lease (a sub-second lease gets a proportionally smaller one).
inline Millis stop_margin(Millis lease) {
  return std::min(std::clamp(lease / 20, Millis(100), Millis(1000)), lease / 10);
}

// The longest --kill-after a lease can carry. Renewals start at lease/3 after the last
// confirmed one; the stop point must come at least one margin after that, so that the
// renewal due then has time to be answered (or retried) before stopping starts:
//   kill_after <= 2*lease/3 - 2*margin.
// For the default 30s lease that is 18s; for a 2s lease, 1.13s.
inline Millis max_kill_after(Millis lease) {
  return std::max(lease * 2 / 3 - 2 * stop_margin(lease), Millis(0));
}

// How often a lease is renewed when stopping starts `stop_lead` before its deadline:
// every lease/3, or sooner, so that half the time from a renewal to the stop point is left
// for the next renewal to be answered or retried (short leases with a long --kill-after).
inline Millis renew_interval(Millis lease, Millis stop_lead) {
  Millis to_stop = lease - stop_lead;
  return to_stop.count() > 0 ? std::min(lease / 3, to_stop / 2) : lease / 3;
}

}  // namespace rlock::exec
