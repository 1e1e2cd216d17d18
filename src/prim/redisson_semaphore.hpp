#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prim/redisson_layout.hpp"
#include "prim/semaphore.hpp"

namespace rlock::prim {

// Redisson's RPermitExpirableSemaphore (--layout redisson, --redisson-object
// permit-expirable-semaphore): the bare name holds the free permits (LongCodec), the zset
// {NAME}:timeout each taken permit's id (16 random bytes; shown and passed as 32 hex digits,
// as Redisson's API does) with the epoch ms at which it expires, and every change is
// announced on redisson_sc:{NAME}. A permit rlock takes is one a Java client can release or
// renew by its id, and the other way round. Redisson has no queue: a release wakes every
// waiter and the first to retry takes the permit. Expiries rlock writes are the server's
// clock (TIME); Redisson writes its client's.
// What a call on an RSemaphore (`plain`) saw of its anonymous permits.
struct AnonymousPermits {
  bool taken = false;        // take_anonymous: the permits are the caller's
  bool interrupted = false;  // take_anonymous: a signal ended the wait
  long long free = 0;        // the free count after the call (as last seen when not taken)
};

class RedissonSemaphore {
 public:
  // Throws UsageError for a name with a brace (see RedissonLayout::check_name). `prefix`:
  // where a release's reply record goes (PREFIX redisson:{NAME}:..., never read by Redisson).
  // `plain`: Redisson's RSemaphore instead (prim/redisson_rsemaphore.cpp): anonymous
  // permits that never expire, taken only by acquire (and hold, for exec).
  RedissonSemaphore(redis::Topology& topology, std::string name, const std::string& prefix,
                    bool plain = false);

  // As Semaphore::acquire: a semaphore not set yet is set to req.capacity (Redisson's
  // trySetPermits); a total (free + taken) other than req.capacity throws DataError unless
  // req.resize (setPermits).
  PermitAcquisition acquire(const PermitRequest& req, Deadline until, const WaitHooks& hooks);
  PermitRelease release(const std::vector<std::string>& ids);
  std::vector<PermitInfo> force_release();
  std::vector<std::string> renew(const std::vector<std::string>& ids, Millis lease);
  std::unique_ptr<Hold> hold(const PermitsHeld& held, Millis lease);
  // capacity is the total (free + taken), 0 when the semaphore was never set.
  SemaphoreState read(const SemaphorePage& page);

  // RSemaphore (`plain`) only, as its Java API: tryAcquire(count, wait), waiting until
  // `until` for a message on the channel; `capacity` > 0 sets a semaphore never set first
  // (trySetPermits), 0 leaves it unset (none free). Never taken when interrupted.
  AnonymousPermits take_anonymous(long long count, long long capacity, Deadline until,
                                  const WaitHooks& hooks);
  // release(count), by anyone: INCRBY, the new free count announced and returned.
  long long give_anonymous(long long count);
  // availablePermits: nullopt when the semaphore was never set.
  std::optional<long long> free_anonymous();

  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }
  const std::string& timeouts_key() const { return timeouts_key_; }
  const std::string& channel() const { return channel_; }

 private:
  friend class RedissonPermitWait;
  friend class RedissonPlainWait;
  friend class RedissonPlainHold;
  PermitAcquisition acquire_plain(const PermitRequest& req, Deadline until, const WaitHooks& hooks);
  redis::Reply run_plain(const redis::Script& script, const std::vector<std::string_view>& keys,
                         const std::vector<std::string>& args);
  // Gives `count` permits back (lua/redisson_rsem_release.lua); `taken`: the acquisition's
  // reply record, removed. Reply {released, free}.
  redis::Reply release_plain(long long count, const std::string& taken);
  // `reply_key`: the request's reply record (release), "" for none.
  redis::Reply run(const redis::Script& script, const std::vector<std::string>& args,
                   redis::Acks* acks = nullptr, const std::string& reply_key = {});
  // A release (force: of every permit) recorded under a reply key of its own: repeated
  // after a lost reply, it reports what the first run released.
  redis::Reply release_script(bool force, const std::vector<std::string>& ids);

  redis::Topology& topology_;
  std::string name_;
  RedissonLayout layout_;
  bool plain_;
  std::string key_, timeouts_key_, channel_;
};

// Throws UsageError unless every id is a permit id as Redisson's API takes it: an even
// number (2 to 256) of hex digits.
void check_redisson_permit_ids(const std::vector<std::string>& ids);

}  // namespace rlock::prim
