#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlock::prim {

// The one place that names keys and channels. Every key of one object shares the hash
// tag {NAME}, so an object lives in one cluster slot. A Redisson-compatible layout can
// replace this class without touching the primitives.
class KeyLayout {
 public:
  // `prefix` is prepended to every key and channel. Default: "rlock:".
  explicit KeyLayout(std::string prefix = "rlock:") : prefix_(std::move(prefix)) {}

  std::string lock_key(std::string_view name) const;      // hash owner -> count
  std::string fence_key(std::string_view name) const;     // fencing token
  std::string lock_channel(std::string_view name) const;  // release notifications
  std::string waiters_key(std::string_view name) const;   // queue of waiters
  // Where a release hands the lock to the wait `wait_id`: lock_channel + ":" + wait_id
  // (lock_release.lua builds the same name from the release channel).
  std::string grant_channel(std::string_view name, std::string_view wait_id) const;

  // SCAN MATCH pattern for the lock hashes whose names match `name_glob` (Redis glob).
  std::string lock_key_pattern(std::string_view name_glob) const;
  // The lock name a key returned by that pattern belongs to; nullopt for other keys.
  std::optional<std::string> lock_name(std::string_view key) const;

  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

}  // namespace rlock::prim
