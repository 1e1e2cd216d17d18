#include "inspect/watch.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "redis/errors.hpp"

namespace rlock::inspect {
namespace {

constexpr Millis kMinGap{100};
// Notifications read before a listing at most: a flood must not hold the listing back.
constexpr int kMaxDrained = 10000;

Millis since(Deadline t) { return std::chrono::duration_cast<Millis>(SteadyClock::now() - t); }

// True when `fd` became readable before `until`.
bool readable_before(int fd, Deadline until) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    auto left = millis_until(until);
    int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc > 0) return true;
    if (SteadyClock::now() >= until) return false;
  }
}

}  // namespace

Watch::Watch(redis::Topology& topology, const prim::KeyLayout& layout, std::string name_glob,
             std::vector<const ObjectType*> types, Millis interval)
    : topology_(topology),
      layout_(layout),
      name_glob_(std::move(name_glob)),
      types_(std::move(types)),
      interval_(interval) {}

std::vector<Shown> Watch::list() {
  const Deadline start = SteadyClock::now();
  changed_ = false;
  std::vector<Shown> all;
  try {
    scan_objects(topology_, layout_, name_glob_, types_, [&](const std::vector<Shown>& batch) {
      all.insert(all.end(), batch.begin(), batch.end());
    });
  } catch (...) {
    last_end_ = SteadyClock::now();
    last_took_ = since(start);
    throw;
  }
  std::sort(all.begin(), all.end(), [](const Shown& a, const Shown& b) {
    return a.name != b.name ? a.name < b.name : a.type->type() < b.type->type();
  });
  if (subscribe_next_) subscribe();
  last_end_ = SteadyClock::now();
  last_took_ = since(start);
  return all;
}

void Watch::subscribe() {
  try {
    events_ = redis::KeyspaceEvents::open(topology_, layout_.prefix(), &why_polling_);
    subscribe_next_ = false;
  } catch (const UnavailableError& e) {
    // Gone since the listing: the next one tries again.
    why_polling_ = e.what();
  }
}

bool Watch::wait(int interrupt_fd) {
  while (true) {
    const Deadline due = last_end_ + interval_;
    const Deadline soonest = last_end_ + std::max(kMinGap, last_took_);
    const Deadline until = changed_ ? std::min(due, soonest) : due;
    if (SteadyClock::now() >= until) {
      drain();
      return true;
    }
    if (!events_) return !readable_before(interrupt_fd, until);
    try {
      switch (events_->wait(until, interrupt_fd)) {
        case redis::KeyspaceEvents::Wake::kChange:
          changed_ = true;
          break;
        case redis::KeyspaceEvents::Wake::kTimeout:
          return true;
        case redis::KeyspaceEvents::Wake::kInterrupted:
          return false;
      }
    } catch (const redis::IoError& e) {
      // What changed meanwhile is unknown: list now (which reconnects, and subscribes again).
      unsubscribed(e);
      changed_ = true;
    }
  }
}

void Watch::drain() {
  // One script's writes notify together: the listing they cause covers all of them, and
  // the ones still unread would otherwise cause a second listing right after.
  if (!events_) return;
  try {
    for (int i = 0; i < kMaxDrained; ++i) {
      if (events_->wait(SteadyClock::now(), -1) != redis::KeyspaceEvents::Wake::kChange) break;
    }
  } catch (const redis::IoError& e) {
    unsubscribed(e);
  }
}

void Watch::unsubscribed(const redis::IoError& e) {
  // The server went away or stopped being the master: the next listing that succeeds
  // subscribes again, wherever the prefix's keys are then.
  events_.reset();
  why_polling_ = e.what();
  subscribe_next_ = true;
}

std::string Watch::timing() const {
  if (events_) {
    return "on keyspace notifications, at least every " + format_duration(interval_);
  }
  return "every " + format_duration(interval_) + " (" + why_polling_ + ")";
}

}  // namespace rlock::inspect
