#pragma once

#include <string>

#include "cli/lock_options.hpp"
#include "cli/settings.hpp"
#include "prim/key_layout.hpp"

namespace rlock::cli {

// Under --layout redisson, points `layout` at the Redisson lock object `what` (lock, exec,
// unlock) works on (lock_object): a read-write lock makes every Lock on `layout` Redisson's
// RReadWriteLock. Throws UsageError, before anything is sent, for what that object has
// no form for in `req` (nullptr: no request to check).
void select_redisson_lock(prim::KeyLayout& layout, const Settings& settings, bool shared,
                          const std::string& what, const LockRequest* req = nullptr);

}  // namespace rlock::cli
