#pragma once

#include <string>

#include "cli/lock_options.hpp"
#include "cli/settings.hpp"

namespace rlock::cli {

// `sem acquire`, `release` and `status` on Redisson's RSemaphore (--layout redisson
// --redisson-object semaphore), as its Java API: anonymous permits that never expire, the
// free count the only state. The flags are checked by the caller (sem_cmd.cpp).

// What a `sem` command line gave beyond the defaults, for check_rsem_flags.
struct RsemGiven {
  bool renew = false;    // the subcommand is renew
  bool acquire = false;  // the subcommand is acquire
  bool lease = false;    // --lease (acquire)
  bool resize = false;   // --resize (acquire, exec)
  bool force = false;    // --force (release)
  bool ids = false;      // --permit (release, renew)
  bool paging = false;   // --limit or --after (status)
};
// Throws UsageError (one line, why) for what an RSemaphore has nothing for: renew, --resize,
// --lease on acquire, release --force or --permit, status paging.
void check_rsem_flags(const RsemGiven& given);

// tryAcquire(count, wait): prints {"name","acquired","count","free"}; busy exits
// lock.conflict_exit_code. `capacity` > 0 sets a semaphore never set (trySetPermits).
int run_rsem_acquire(const LockRequest& lock, long long count, long long capacity,
                     const Settings& settings);
// release(count): prints {"name","released","free"}.
int run_rsem_release(const std::string& name, long long count, const Settings& settings);
// availablePermits: prints {"name","exists","capacity":null,"in_use":null,"free"}.
int run_rsem_status(const std::string& name, const Settings& settings);

}  // namespace rlock::cli
