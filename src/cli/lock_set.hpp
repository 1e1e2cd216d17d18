#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/lock_options.hpp"
#include "prim/multi_lock.hpp"
#include "prim/pool.hpp"

namespace rlock::cli {

// What `lock` and `exec` take for their NAMEs: all of them (prim::MultiLock; one name is
// the case n=1) or, with --one-of, one of them (prim::Pool).
class LockSet {
 public:
  LockSet(redis::Topology& topology, const prim::KeyLayout& layout, const LockRequest& req);

  // See MultiLock::acquire and Pool::acquire; a pool's wait is shown as one wait for
  // "lock 'a' or 'b' or 'c'".
  prim::MultiLock::Outcome acquire(const LockRequest& req, const prim::MultiLock::HooksFor& hooks,
                                   prim::HoldKind kind);
  void give_back(const std::string& owner, const std::vector<prim::MultiLock::Taken>& taken,
                 prim::HoldKind kind) noexcept;
  void set_ancestry(const std::vector<prim::AncestorHold>& holds);
  // What the request says of every acquisition (--note; --supersede, --cancel-running and
  // --priority, which take one NAME, never a pool).
  void configure(const LockRequest& req);
  // See MultiLock::set_run (exec --once-per: one NAME, never a pool).
  void set_run(const std::string& run_id);

  // One line for a request not granted (see describe_busy), saying that nothing is held.
  std::string describe_refused(const prim::MultiLock::Refused& refused, Millis waited) const;
  // "lock 'a'", "locks 'a' and 'b'", or a pool's "one of locks 'a', 'b' and 'c'".
  std::string named() const;

 private:
  std::vector<std::string> names_;
  size_t count_;  // of a pool
  std::optional<prim::MultiLock> all_;
  std::optional<prim::Pool> pool_;
};

}  // namespace rlock::cli
