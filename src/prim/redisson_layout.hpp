#pragma once

#include <string>
#include <string_view>

#include "prim/key_layout.hpp"

namespace rlock::prim {

// Redisson's RLock layout (`--layout redisson`), so that an `rlock exec` and a Java
// service's RLock of the same name exclude each other and wake each other's waiters: the
// lock hash under the bare name, fields "<UUID>:<thread id>" -> reentry count, PEXPIRE
// lease, "0" published on "redisson_lock__channel:{name}" when the lock is freed. What
// rlock adds (fence, FIFO queue, grants, exec hold ids, request and reply records) lives
// under rlock's prefix with the hash tag {name}: the slot of the bare name, so that every
// key a script touches is in one cluster slot and Redisson never reads them. Locks only:
// the other primitives and shared holds are refused where they are asked for.
class RedissonLayout : public KeyLayout {
 public:
  explicit RedissonLayout(std::string prefix = "rlock:");

  // Throws UsageError for a name with a brace: Redisson and its ports disagree on such a
  // name's channel ("redisson_lock__channel:" + name, or only when it starts with "{"),
  // and its slot need not be that of "{name}".
  void check_name(std::string_view name) const override;

  std::string lock_key(std::string_view name) const override;  // the bare name
  std::string fence_key(std::string_view name) const override;
  std::string waiters_key(std::string_view name) const override;
  std::string timeouts_key(std::string_view name) const override;
  std::string grant_key(std::string_view name) const override;
  std::string policy_key(std::string_view name) const override;
  std::string superseded_key(std::string_view name) const override;
  std::string exec_key(std::string_view name) const override;
  std::string readers_key(std::string_view name) const override;
  std::string reader_grants_key(std::string_view name) const override;
  std::string reader_expiries_key(std::string_view name) const override;
  std::string notes_key(std::string_view name) const override;
  std::string request_key(std::string_view name, std::string_view id) const override;
  std::string reply_key(std::string_view name, std::string_view id) const override;
  std::string lock_channel(std::string_view name) const override;
  std::string sem_key(std::string_view name) const override;
  // RCountDownLatch: its count under the bare name, its channel
  // "redisson_countdownlatch__channel__{NAME}".
  std::string latch_key(std::string_view name) const override;
  std::string latch_ids_key(std::string_view name) const override;
  std::string latch_channel(std::string_view name) const override;
  std::string latch_key_pattern(std::string_view name_glob) const override;
  std::optional<std::string> latch_name(std::string_view key) const override;
  bool redisson_latch() const override { return true; }
  // RPermitExpirableSemaphore, for inspect: its {NAME}:timeout zset, there while a permit
  // is taken (prim/redisson_semaphore).
  std::string sem_key_pattern(std::string_view name_glob) const override;
  std::optional<std::string> sem_name(std::string_view key) const override;
  std::string scan_type_of(std::string_view object_type) const override;
  std::string foreign_lock_channel(std::string_view name) const override;
  std::string owner_field(std::string_view owner) const override;

  // Every hash whose name matches: which of them are locks is decided by their values.
  std::string lock_key_pattern(std::string_view name_glob) const override;
  std::optional<std::string> lock_name(std::string_view key) const override;
  std::optional<std::string> readers_name(std::string_view key) const override;
  // Redisson's RRateLimiter: its config hash under the bare name (prim/redisson_limiter).
  std::string limiter_key_pattern(std::string_view name_glob) const override;
  std::optional<std::string> limiter_name(std::string_view key) const override;
  // Every object is under its bare name: the types' *_name() and values tell them apart.
  std::string any_key_pattern(std::string_view name_glob) const override;
  std::string scan_type() const override { return "hash"; }
  bool locks_only() const override { return true; }
  // Locks are Redisson's RReadWriteLock from now on (--redisson-object read-write-lock).
  void use_read_write_lock() { read_write_ = true; }
  bool read_write_lock() const override { return read_write_; }

 private:
  // prefix + "redisson:{" + name + "}:" + what
  std::string own_key(std::string_view name, std::string_view what) const;
  bool read_write_ = false;
};

// The Redisson field for an rlock owner: the owner itself when it already has Redisson's
// shape "<UUID>:<decimal thread id>" (so that `--owner` can name a Java hold), otherwise a
// UUID derived from the owner (the same owner always maps to the same field, on every
// host) followed by ":1".
std::string redisson_owner_field(std::string_view owner);

}  // namespace rlock::prim
