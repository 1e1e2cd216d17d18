#include "cli/lock_set.hpp"

#include "util/duration.hpp"

namespace rlock::cli {

LockSet::LockSet(redis::Topology& topology, const prim::KeyLayout& layout, const LockRequest& req)
    : names_(req.names), count_(req.count) {
  if (req.pool) {
    pool_.emplace(topology, layout, req.names, req.count);
  } else {
    all_.emplace(topology, layout, req.names);
  }
}

prim::MultiLock::Outcome LockSet::acquire(const LockRequest& req,
                                          const prim::MultiLock::HooksFor& hooks,
                                          prim::HoldKind kind) {
  if (all_) return all_->acquire(req.owner, req.lease, req.wait_until, hooks, kind, req.mode);
  std::string either;
  for (const auto& n : names_) either += (either.empty() ? "" : "' or '") + n;
  return pool_->acquire(req.owner, req.lease, req.wait_until, hooks(either), kind, req.mode);
}

void LockSet::give_back(const std::string& owner, const std::vector<prim::MultiLock::Taken>& taken,
                        prim::HoldKind kind) noexcept {
  if (all_) return all_->give_back(owner, taken, kind);
  pool_->give_back(owner, taken, kind);
}

void LockSet::set_ancestry(const std::vector<prim::AncestorHold>& holds) {
  if (all_) return all_->set_ancestry(holds);
  pool_->set_ancestry(holds);
}

void LockSet::configure(const LockRequest& req) {
  if (pool_) return pool_->set_note(req.note);
  all_->set_note(req.note);
  all_->set_queue_policy(req.policy);
}

void LockSet::set_run(const std::string& run_id) {
  if (all_) all_->set_run(run_id);
}

std::string LockSet::named() const { return (pool_ ? "one of " : "") + locks_named(names_); }

std::string LockSet::describe_refused(const prim::MultiLock::Refused& refused,
                                      Millis waited) const {
  if (all_) {
    std::string line = describe_busy(refused.name, refused.busy, waited);
    return names_.size() > 1 ? line + "; none of " + locks_named(names_) + " is held" : line;
  }
  const prim::Busy& busy = refused.busy;
  std::string line = (waited.count() > 0 ? "gave up after waiting " + format_duration(waited) + ": "
                                         : std::string()) +
                     (count_ > 1 ? "fewer than " + std::to_string(count_) + " of " +
                                       locks_named(names_) + " are free (held by "
                                 : "every one of " + locks_named(names_) + " is held (by ") +
                     describe_holders(busy.holders) + ")";
  if (busy.ttl.count() >= 0) line += ", the first lease ends in " + format_duration(busy.ttl);
  return line + "; none of them is held by this request";
}

}  // namespace rlock::cli
