#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inspect/scan_stream.hpp"
#include "redis/errors.hpp"
#include "redis/keyspace_events.hpp"
#include "util/duration.hpp"

namespace rlock::inspect {

// Shortest --interval of `inspect --watch`: a full listing more often would load the
// server for a display nobody reads that fast.
inline constexpr Millis kMinWatchInterval{100};

// When `inspect --watch` lists again, and the listing itself. Where the server sends
// keyspace notifications (redis::KeyspaceEvents), a change under the prefix brings the
// next listing forward; otherwise, and at the latest, it comes every `interval`. A burst
// of changes makes one listing: listings start at least the last one's duration (and at
// least 100 ms) apart, so that a busy server costs the watch at most half its time.
class Watch {
 public:
  Watch(redis::Topology& topology, const prim::KeyLayout& layout, std::string name_glob,
        std::vector<const ObjectType*> types, Millis interval);

  // Every object of the watched types whose name matches, sorted by name then type: all of
  // them in memory (a screen or a line shows them at once). Throws what scan_objects throws.
  // The notifications are subscribed to after the first listing that succeeds, and again
  // after the subscription was lost.
  std::vector<Shown> list();

  // Sleeps until the next listing is due (true) or `interrupt_fd` becomes readable (false).
  bool wait(int interrupt_fd);

  // How the listings are timed, for -v: "on keyspace notifications, at least every 1s" or
  // "every 1s (WHY)".
  std::string timing() const;

 private:
  void subscribe();
  void drain();  // reads the notifications that arrived already
  void unsubscribed(const redis::IoError& e);

  redis::Topology& topology_;
  const prim::KeyLayout& layout_;
  std::string name_glob_;
  std::vector<const ObjectType*> types_;
  Millis interval_;
  std::optional<redis::KeyspaceEvents> events_;
  std::string why_polling_;
  bool subscribe_next_ = true;  // after the next listing that succeeds
  bool changed_ = false;        // a notification came since the last listing started
  Deadline last_end_{};
  Millis last_took_{0};
};

}  // namespace rlock::inspect
