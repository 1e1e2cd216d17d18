#include "cli/redisson_lock.hpp"

#include "prim/redisson_layout.hpp"
#include "util/error.hpp"

namespace rlock::cli {
namespace {

// What Redisson's read-write lock has no place for: a queue (it is not fair), notes.
void refuse_for_read_write_lock(const LockRequest& req, const std::string& what) {
  const char* flag = req.pool                   ? "--one-of"
                     : !req.note.empty()        ? "--note"
                     : req.policy.supersede     ? "--supersede"
                     : req.policy.priority != 0 ? "--priority"
                                                : nullptr;
  if (!flag) return;
  throw UsageError(what + ": " + flag +
                   " has no form in Redisson's read-write lock (it keeps no queue and no "
                   "notes); leave it out under --redisson-object read-write-lock");
}

}  // namespace

void select_redisson_lock(prim::KeyLayout& layout, const Settings& settings, bool shared,
                          const std::string& what, const LockRequest* req) {
  if (settings.layout != Layout::kRedisson) return;
  if (lock_object(settings, shared, what) != RedissonObject::kReadWriteLock) return;
  if (req) refuse_for_read_write_lock(*req, what);
  if (auto* redisson = dynamic_cast<prim::RedissonLayout*>(&layout))
    redisson->use_read_write_lock();
}

}  // namespace rlock::cli
