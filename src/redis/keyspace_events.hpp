#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "redis/subscriber.hpp"
#include "redis/topology.hpp"
#include "util/clock.hpp"

namespace rlock::redis {

// Changes to the keys under a prefix, as the server's keyspace notifications tell them:
// what lets a display refresh when something changed instead of polling for it.
class KeyspaceEvents {
 public:
  enum class Wake { kChange, kTimeout, kInterrupted };

  // Subscribed on `topology`'s server to the notifications of keys starting with `prefix`,
  // or nullopt with `*why` saying why there are none to have: notify-keyspace-events does
  // not enable them (read with CONFIG GET, never changed: the server is the operator's), the
  // server refuses CONFIG GET or PSUBSCRIBE to this user, or the deployment is a cluster
  // (each node notifies of its own keys only). Throws UnavailableError when the server is.
  static std::optional<KeyspaceEvents> open(Topology& topology, const std::string& prefix,
                                            std::string* why);

  // Sleeps until a key under the prefix changes, `until` passes, or `interrupt_fd` becomes
  // readable; returns by `until` however many notifications arrive. Throws IoError when
  // the subscription is lost (the server went away or stopped being the master).
  Wake wait(Deadline until, int interrupt_fd);

 private:
  KeyspaceEvents(Subscriber sub, std::string prefix, bool by_event)
      : sub_(std::move(sub)), prefix_(std::move(prefix)), by_event_(by_event) {}

  Subscriber sub_;
  std::string prefix_;
  bool by_event_;  // __keyevent channels: the key is the payload, and other keys come too
};

// The PSUBSCRIBE pattern that hears of changes to keys under `prefix` in database `db`
// when notify-keyspace-events is `flags`: the keyspace channels (K) where enabled, else
// every keyevent channel (E, to be filtered on the key); nullopt when `flags` notify of
// none of the changes rlock makes (generic, string, list, set, hash, zset, expired,
// evicted). Glob characters of the prefix are escaped.
std::optional<std::string> keyspace_pattern(std::string_view flags, int db,
                                            std::string_view prefix);

}  // namespace rlock::redis
