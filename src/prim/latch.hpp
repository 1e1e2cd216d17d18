#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prim/key_layout.hpp"
#include "prim/wait.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

// The largest count or amount a latch takes: Lua numbers are doubles, exact up to 2^53 - 1.
inline constexpr long long kMaxLatchCount = (1LL << 53) - 1;
// A latch that reached zero and has no expiry of its own is kept (count 0) this long, so
// that `await` tells a finished latch from one never set.
inline constexpr Millis kLatchReachedRetention{24 * 60 * 60 * 1000};

// What a latch is now; independent of any output format (for `latch status` and inspect).
struct LatchState {
  bool exists = false;           // false: never set, or expired (the rest is empty)
  long long count = 0;           // 0: reached
  std::vector<std::string> ids;  // a page of the --id values that counted down (when asked)
  long long ids_total = 0;       // how many ids counted down
  long long ttl_ms = -1;         // -1: no expiry
  std::string next;              // the cursor of the next page of ids; "" when all were read
};

// Which page of a latch's ids Latch::read lists: from `cursor` (as LatchState::next gave
// it, "" for the first page), about `limit` of them (a server's cursor step may add a few):
// a reply and a server's work bounded whatever the number of ids. Ids come in no order
// across pages; one may come twice when the set is resized between pages.
struct LatchIdsPage {
  std::string cursor;
  long long limit = 1000;
};

// What Latch::set did.
struct LatchSet {
  bool set = false;                   // false: refused, the latch is live (count > 0)
  long long count = 0;                // set: the new count; refused: the live count
  std::optional<long long> previous;  // set: the count it replaced, if any
  long long replicas_acked = -1;      // set: replicas that acknowledged it; -1 = not asked
};

// What Latch::count_down did.
struct LatchCountDown {
  enum class Outcome {
    kCounted,   // applied (maybe 0 when it was at 0 already)
    kRepeated,  // the id has counted down before: nothing changed
    kMissing,   // no such latch (never set, or expired): nothing changed
  };
  Outcome outcome = Outcome::kMissing;
  long long count = 0;            // the count afterwards
  long long applied = 0;          // how much was taken off (never below zero)
  bool reached = false;           // this call brought it to 0 (waiters were woken)
  long long replicas_acked = -1;  // counted: replicas that acknowledged it; -1 = not asked
};

// A countdown latch (Redisson's RCountDownLatch: an integer), with what a command line
// needs beyond it: a participant id that counts once however often it retries, an expiry
// of the whole latch on the server clock, and a count-0 marker after it is reached.
// Every change is one script. Under a layout with redisson_latch() it is Redisson's own:
// no marker (a missing latch is open), no ids, Redisson's messages.
class Latch {
 public:
  Latch(redis::Topology& topology, const KeyLayout& layout, std::string name);

  // Creates the latch with `count` (1..kMaxLatchCount) and, if `expire` > 0, that expiry
  // for all its keys. A live latch (count > 0) is kept unless `force`.
  LatchSet set(long long count, Millis expire, bool force);

  // Takes `amount` (>= 1) off the count, clamped at 0; `id` (non-empty) counts only once.
  LatchCountDown count_down(long long amount, const std::string& id = "");

  // The latch's state; `with_ids` also reads one page of the ids counted, sorted.
  LatchState read(bool with_ids = true, const LatchIdsPage& page = {});

  // True once the count is 0, at once or on the wake-up published at zero (sleeping on
  // pub/sub in the shared waiting loop, across reconnections); false when `until` passes
  // or a stop signal ends the wait (see WaitHooks). A latch not set yet is waited for.
  bool await(Deadline until, const WaitHooks& hooks = {});

  const std::string& name() const { return name_; }

 private:
  friend class LatchWait;

  // KEYS of the latch script `Contract` that changes it: lua/include/latch_common.lua's,
  // then its reply record `reply_key`.
  template <class Contract>
  std::vector<std::string_view> keys(const std::string& reply_key) const;

  redis::Topology& topology_;
  std::string name_;
  std::string key_, ids_key_, channel_;
  std::string reply_key_prefix_;  // + a request id: KeyLayout::reply_key
  bool redisson_ = false;         // KeyLayout::redisson_latch
};

// Reads one latch without a Latch object (for inspect): see Latch::read.
LatchState read_latch(redis::Topology& topology, const KeyLayout& layout, const std::string& name,
                      bool with_ids = true, const LatchIdsPage& page = {});

}  // namespace rlock::prim
