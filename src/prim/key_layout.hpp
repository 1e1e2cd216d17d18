#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlock::prim {

// The one place that names keys and channels. Every key and channel of one object shares
// the hash tag {NAME}, so an object lives in one cluster slot; braces and '%' in a name are
// percent-encoded inside the tag, so no name can end the tag early or split an object
// over slots, and names never collide. A Redisson-compatible layout can subclass this
// without touching the primitives.
class KeyLayout {
 public:
  // `prefix` is prepended to every key and channel. Default: "rlock:". It may be empty; a
  // brace in it would move the hash tag into the prefix, so it throws UsageError.
  explicit KeyLayout(std::string prefix = "rlock:");
  virtual ~KeyLayout() = default;

  virtual std::string lock_key(std::string_view name) const;      // hash owner -> count
  virtual std::string fence_key(std::string_view name) const;     // fencing token
  virtual std::string waiters_key(std::string_view name) const;   // zset wait -> arrival
  virtual std::string timeouts_key(std::string_view name) const;  // zset wait -> its deadline
  virtual std::string grant_key(std::string_view name) const;     // the wait granted, unclaimed
  virtual std::string exec_key(std::string_view name) const;      // the exec hold running
  virtual std::string readers_key(std::string_view name) const;   // shared holds, each its lease
  virtual std::string reader_grants_key(std::string_view name) const;  // readers granted, unclaimed
  virtual std::string reader_expiries_key(std::string_view name) const;  // readers by expiry
  // What a lock's holds and waits say of themselves (hash): the exclusive hold's "owner",
  // "at" (server ms it was acquired) and "note", and "w:<waiters member>" -> that wait's note.
  virtual std::string notes_key(std::string_view name) const;
  // Queue policies (--supersede, --cancel-running): a hash; and the superseded waits' records
  // by the time they are kept until (a zset). See lua/include/lock_common.lua.
  virtual std::string policy_key(std::string_view name) const;
  virtual std::string superseded_key(std::string_view name) const;
  // Outcome of request `id` (acquired / given up), for idempotent retries and clean-up.
  virtual std::string request_key(std::string_view name, std::string_view id) const;
  virtual std::string lock_channel(std::string_view name) const;  // releases, expiry changes
  // The reply of request `id` on the object `name` (of any type), recorded so that the
  // request repeated after a lost reply gets it back (`once` in lua/include/common.lua).
  virtual std::string reply_key(std::string_view name, std::string_view id) const;
  // Where the lock is granted to the wait `wait_id`: lock_channel + ":" + wait_id (the Lua
  // scripts build the same name from the lock channel).
  std::string grant_channel(std::string_view name, std::string_view wait_id) const;
  // Where a lock's new exclusive holders are announced to its observers (rlock elect
  // --observe): lock_channel + ":observe", built so by the Lua scripts too (announce_holder
  // in lua/include/lock_common.lua); wait ids are hex, so it is no wait's grant channel.
  std::string observe_channel(std::string_view name) const;
  // Where a lock's holders hear that a hold may have been taken from them on the server
  // (unlock --force, --cancel-running): lock_channel + ":holder", as tell_holders in
  // lua/include/lock_common.lua builds it. exec's watchdog renews at once on a message.
  std::string holder_channel(std::string_view name) const;

  // A semaphore: zset permit id -> lease expiry (server ms), and beside it its config
  // (hash: capacity), holders (hash permit id -> owner), waiters and timeouts (as a lock's),
  // grants (zset wait -> reservation expiry) and request records.
  virtual std::string sem_key(std::string_view name) const;
  virtual std::string sem_config_key(std::string_view name) const;
  virtual std::string sem_holders_key(std::string_view name) const;
  virtual std::string sem_waiters_key(std::string_view name) const;
  virtual std::string sem_timeouts_key(std::string_view name) const;
  virtual std::string sem_grants_key(std::string_view name) const;
  // What its permits and waits say of themselves (hash): "p:<permit id>" -> "<server ms it
  // was taken> <note>", "w:<waiters member>" -> that wait's note.
  virtual std::string sem_notes_key(std::string_view name) const;
  virtual std::string sem_request_key(std::string_view name, std::string_view id) const;
  virtual std::string sem_channel(std::string_view name) const;  // releases, expiry changes
  // Where permits are granted to the wait `wait_id`: sem_channel + ":" + wait_id.
  std::string sem_grant_channel(std::string_view name, std::string_view wait_id) const;

  virtual std::string latch_key(std::string_view name) const;      // string count
  virtual std::string latch_ids_key(std::string_view name) const;  // set of ids counted
  virtual std::string latch_channel(std::string_view name) const;  // the count reached 0

  // A rate limiter: hash of its config (rate, per_ms, burst, per_client, client_rate) and
  // overall state (tat), and beside it its per-client buckets (zset client id -> TAT).
  virtual std::string limiter_key(std::string_view name) const;
  virtual std::string limiter_clients_key(std::string_view name) const;
  // A delayed queue (lua/include/queue_common.lua): its main hash (the push sequence;
  // present while the queue holds any item, so that inspect finds it), the scheduled zset
  // ("<seq>:<id>" -> due server ms), payloads (id -> bytes), item metadata, the in-flight
  // zset (id -> lease expiry), the leases (id -> token and consumer), the dead letters and
  // the finished deliveries (tokens kept for a retried acknowledgement).
  virtual std::string queue_key(std::string_view name) const;
  virtual std::string queue_scheduled_key(std::string_view name) const;
  virtual std::string queue_items_key(std::string_view name) const;
  virtual std::string queue_meta_key(std::string_view name) const;
  virtual std::string queue_inflight_key(std::string_view name) const;
  virtual std::string queue_leases_key(std::string_view name) const;
  virtual std::string queue_dead_key(std::string_view name) const;
  virtual std::string queue_finished_key(std::string_view name) const;  // retried finishes
  virtual std::string queue_channel(std::string_view name) const;  // an earlier item was pushed

  // The run history of exec --once-per on `name` (list, newest first, bounded; no TTL: it
  // outlives the lock), and its SCAN pattern and name, as for the other types.
  virtual std::string runs_key(std::string_view name) const;
  virtual std::string runs_key_pattern(std::string_view name_glob) const;
  virtual std::optional<std::string> runs_name(std::string_view key) const;

  // SCAN MATCH pattern for the lock hashes and readers hashes whose names match
  // `name_glob` (Redis glob).
  virtual std::string lock_key_pattern(std::string_view name_glob) const;
  // The lock name a key returned by that pattern belongs to; nullopt for other keys.
  virtual std::optional<std::string> lock_name(std::string_view key) const;
  // The lock name whose readers hash `key` is; nullopt for other keys.
  virtual std::optional<std::string> readers_name(std::string_view key) const;
  // The same two for latches (rlock:latch:{NAME}).
  virtual std::string sem_key_pattern(std::string_view name_glob) const;  // semaphores in use
  virtual std::optional<std::string> sem_name(std::string_view key) const;
  virtual std::string latch_key_pattern(std::string_view name_glob) const;
  virtual std::optional<std::string> latch_name(std::string_view key) const;
  virtual std::string limiter_key_pattern(std::string_view name_glob) const;
  virtual std::optional<std::string> limiter_name(std::string_view key) const;
  virtual std::string queue_key_pattern(std::string_view name_glob) const;
  virtual std::optional<std::string> queue_name(std::string_view key) const;
  // SCAN MATCH pattern for the main keys of every type at once (prefix + WORD + ":" + tag,
  // the shape all main keys share); each type's *_name() picks its own keys out of it.
  virtual std::string any_key_pattern(std::string_view name_glob) const;

  // Redisson's lock channel, on which a lock freed is announced as "0" to Redisson's
  // waiters too; "" (the default) for none.
  virtual std::string foreign_lock_channel(std::string_view) const { return {}; }
  // The lock hash field of `owner`. Default: the owner itself.
  virtual std::string owner_field(std::string_view owner) const { return std::string(owner); }
  // Throws UsageError for a name this layout cannot place (after validate_name).
  virtual void check_name(std::string_view) const {}
  // The SCAN TYPE of every key inspect lists, or "" for keys of any type.
  virtual std::string scan_type() const { return {}; }
  // True when only locks (exclusive holds) have this layout.
  virtual bool locks_only() const { return false; }
  // True when locks are Redisson's RReadWriteLock (prim/redisson_rwlock.hpp).
  virtual bool read_write_lock() const { return false; }
  // True when latches are Redisson's RCountDownLatch: the count is deleted at zero (a
  // missing latch is open), "0" (zero) and "1" (new count) are published with PUBLISH and
  // SPUBLISH, and no participant ids are kept (Java may start a new round at any time).
  virtual bool redisson_latch() const { return false; }
  // The SCAN TYPE of the keys of inspect's `object_type` (its --type word) when it alone is
  // listed; scan_type() by default.
  virtual std::string scan_type_of(std::string_view /*object_type*/) const { return scan_type(); }

  const std::string& prefix() const { return prefix_; }

 protected:
  // "{" + name with '%', '{', '}' percent-encoded + "}".
  static std::string tag(std::string_view name);
  // prefix + `word` + ":{" + glob over encoded names + "}", the prefix escaped for MATCH.
  std::string key_pattern(std::string_view word, std::string_view name_glob) const;
  // The name inside prefix + `word` + ":{...}"; nullopt for other keys.
  std::optional<std::string> name_in(std::string_view word, std::string_view key) const;

 private:
  std::string prefix_;
};

}  // namespace rlock::prim
