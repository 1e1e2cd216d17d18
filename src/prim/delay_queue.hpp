#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prim/hold.hpp"
#include "prim/key_layout.hpp"
#include "prim/wait.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

// When a pushed item is due: `delay` after the server's clock at the push, or at an
// absolute Unix time in milliseconds (no clock needed).
struct DueTime {
  bool absolute = false;
  long long ms = 0;  // the delay, or the Unix time
};

// One item to push.
struct QueuePush {
  std::string id;
  std::string payload;  // bytes, stored as given
};

// What a push did.
struct Pushed {
  std::string id;
  long long due_ms = 0;    // Unix ms on the server clock (a duplicate: the stored item's)
  bool duplicate = false;  // the id was in the queue already: nothing changed
};

// One item delivered. Id and payload are bytes: another program may have written them.
struct QueueItem {
  std::string id;
  std::string payload;
  long long due_ms = 0;       // when it was scheduled for (server Unix ms)
  long long lateness_ms = 0;  // server time at delivery - when it became due (this time)
  long long deliveries = 0;   // this delivery included
  long long now_ms = 0;       // server time at delivery
  // Dead letters only: why it is one, and whether its payload was missing.
  std::string reason;
  bool no_payload = false;
};

// A delivery under a lease: the item and the token that proves the lease is this one's.
struct LeasedItem {
  QueueItem item;
  std::string token;
  Millis visibility{0};
  Deadline deadline{};  // the server may expire the lease from here on (boot clock)
};

// How long a consumer sleeps at most without a wake-up before it looks again: a wake-up
// lost with a dropped connection delays an item by at most this much.
inline constexpr Millis kQueueRecheck{5000};

// A delayed queue (BullMQ's delayed jobs, on the server clock): items scheduled by due
// time in a zset, taken by consumers who sleep on pub/sub until the earliest due time or
// an earlier push. Taking an item either removes it (at-most-once) or leases it
// (visibility timeout, renewed while it is worked on; acknowledged by deleting it; an
// expired lease makes it due again, up to a maximum of deliveries, then it is a dead
// letter). Every change is one script.
class DelayQueue {
 public:
  DelayQueue(redis::Topology& topology, const KeyLayout& layout, std::string name);

  // Pushes `items` due at `due`, pipelined in one round trip; one result per item, in
  // order. Throws DataError (keys of other types: nothing written), Error for Redis.
  std::vector<Pushed> push(const std::vector<QueuePush>& items, DueTime due);

  // Takes up to `count` due items (removing them), waiting until `until` for one.
  // Empty: none came in time, or `*interrupted` (when given) says a stop signal ended it.
  std::vector<QueueItem> take(long long count, Deadline until, const WaitHooks& hooks,
                              bool* interrupted = nullptr);

  // Leases one due item for `visibility`, waiting until `until` for one; `max_deliveries`
  // (0: none) sends an item delivered that often to the dead letters instead.
  std::optional<LeasedItem> lease(Millis visibility, long long max_deliveries,
                                  const std::string& consumer, Deadline until,
                                  const WaitHooks& hooks, bool* interrupted = nullptr);

  // The lease as a Hold for exec's supervision: renewals extend it, release acknowledges
  // the item when the job ended with 0 and gives it back (due after the visibility
  // timeout) otherwise.
  std::unique_ptr<Hold> hold(const LeasedItem& leased);

  // Gives a lease back at once (the job never ran): the item is due again now, and this
  // delivery does not count towards --max-deliveries.
  bool give_back(const LeasedItem& leased);

  // Takes up to `count` items off the dead-letter list (oldest first) and forgets them.
  std::vector<QueueItem> take_dead(long long count);

  // Puts back items that take() (or take_dead(), `dead`) returned and that could not be
  // handed on: due as they were (their delivery not counted), or at the front of the dead
  // letters. Returns how many went back: an item whose id was pushed again meanwhile is
  // left as the queue has it.
  long long put_back(const std::vector<QueueItem>& items, bool dead);

  const std::string& name() const { return name_; }

 private:
  friend class QueuePop;
  friend class QueueLease;
  // The queue's KEYS, plus `reply_key` (see KeyLayout::reply_key) when not empty.
  std::vector<std::string_view> keys(const std::string& reply_key = {}) const;
  // With `acks`, a claim or a renewal: see run_object_script.
  redis::Reply run(const redis::Script& script, const std::vector<std::string>& args,
                   redis::Retry retry, const std::string& reply_key = {},
                   redis::Acks* acks = nullptr);
  std::string new_reply_key() const;
  // queue_push's ARGV for `item`.
  std::vector<std::string> push_args(const std::string& mode, const std::string& due,
                                     const QueuePush& item, const std::string& ttl) const;
  enum class Finish { kAck, kNack, kUnrun };  // see queue_finish.lua
  bool finish(const LeasedItem& leased, Finish how, Millis retry_after);

  redis::Topology& topology_;
  std::string name_;
  std::vector<std::string> keys_;
  std::string channel_;
  std::string reply_key_prefix_;  // + a request id: KeyLayout::reply_key
};

}  // namespace rlock::prim
