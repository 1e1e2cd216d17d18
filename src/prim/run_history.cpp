#include "prim/run_history.hpp"

#include "prim/object_script.hpp"
#include "prim/wait.hpp"
#include "redis/errors.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"

namespace rlock::prim {

RunHistory::RunHistory(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      name_(std::move(name)),
      key_(layout.runs_key(name_)),
      lock_key_(layout.lock_key(name_)) {}

RunHistory::Claim RunHistory::claim(const std::string& run_id, Millis every, Millis offset,
                                    const std::string& owner, const std::string& host) {
  using C = redis::contract::once_claim;
  const std::string every_ms = millis_arg(every), offset_ms = millis_arg(offset);
  redis::Acks acks;
  acks.about = "schedule slot of '" + name_ + "'";
  auto reply = run_object_script(
      topology_, redis::scripts::once_claim,
      redis::keys_of<C>().set(C::kKeyRuns, key_).set(C::kKeyLock, lock_key_).list(),
      redis::args_of<C>()
          .set(C::kArgRunId, run_id)
          .set(C::kArgEveryMs, every_ms)
          .set(C::kArgOffsetMs, offset_ms)
          .set(C::kArgOwner, owner)
          .set(C::kArgHost, host)
          .list(),
      "run history", redis::Retry::kIdempotent, &acks);
  Claim c;
  c.claimed = reply.at(0).integer() == 1;
  c.slot_start_ms = std::stoll(reply.at(1).str());
  c.slot_end_ms = std::stoll(reply.at(2).str());
  if (!c.claimed) {
    c.taken_by = reply.at(3).str();
    return c;
  }
  require_acks(acks, "the slot's claim may be lost in a failover; the command did not run");
  return c;
}

void RunHistory::finish(const std::string& run_id, const std::string& status,
                        int exit_code) noexcept {
  using C = redis::contract::once_finish;
  const std::string end = run_end_arg(run_id, status, exit_code);
  try {
    run_object_script(topology_, redis::scripts::once_finish,
                      redis::keys_of<C>().set(C::kKeyRuns, key_).list(),
                      redis::args_of<C>().set(C::kArgRunEnd, end).list(), "run history",
                      redis::Retry::kIdempotent);
  } catch (const std::exception&) {  // inspect shows the run as lost once the lock is gone
  }
}

RunHold::RunHold(std::unique_ptr<Hold> inner, RunTrace& trace)
    : Hold(inner->lease(), inner->fence(), inner->deadline()),
      inner_(std::move(inner)),
      trace_(trace) {}

Hold::Renewed RunHold::renew() {
  Renewed r = inner_->renew();
  deadline_ = inner_->deadline();
  return r;
}

Hold::Released RunHold::release(Millis keep) {
  Released r = inner_->release(keep);
  trace_.released = true;
  return r;
}

void RunHold::job_ended(int exit_code) {
  trace_.job_ended = true;
  trace_.exit_code = exit_code;
  inner_->job_ended(exit_code);
}

void RunHold::job_not_started() {
  trace_.not_started = true;
  inner_->job_not_started();
}

std::string unrecorded_end(const RunTrace& trace) {
  if (trace.interrupted) return "unclaimed";
  if (trace.not_started) return "skipped";
  if (!trace.job_ended) return "lost";
  return trace.released ? "" : "exited";
}

std::string run_end_arg(const std::string& run_id, const std::string& status, int exit_code) {
  return run_id + " " + status + (exit_code >= 0 ? " " + std::to_string(exit_code) : "");
}

}  // namespace rlock::prim
