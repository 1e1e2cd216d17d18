#pragma once

#include <memory>
#include <optional>
#include <string>

#include "prim/hold.hpp"
#include "prim/key_layout.hpp"
#include "redis/topology.hpp"
#include "util/duration.hpp"

namespace rlock::prim {

// A name's schedule slots and the record of each slot's run (exec --once-per): slots of
// `every` aligned on the server's clock (Unix epoch multiples, shifted by `offset`), one
// run claimed per slot across all hosts, and the last runs kept on the server (list, newest
// first, lua/include/run_history.lua). The end of a run that a lock release ends is written
// by that release (Lock::set_run), so a run costs one round trip more than a plain exec.
class RunHistory {
 public:
  // Records a history keeps; an older one is dropped as a new one is claimed.
  static constexpr int kKept = 100;

  RunHistory(redis::Topology& topology, const KeyLayout& layout, std::string name);

  struct Claim {
    bool claimed = false;
    long long slot_start_ms = 0, slot_end_ms = 0;  // the slot the server's clock is in
    std::string taken_by;  // not claimed: the JSON record of the run that claimed it
  };
  // Claims the slot of the server's clock now for the run `run_id` of `owner` on `host`
  // (idempotent: a retry after a lost reply claims it again). With --sync-replicas, a claim
  // the replicas did not acknowledge throws ReplicationError (nothing runs on it).
  Claim claim(const std::string& run_id, Millis every, Millis offset, const std::string& owner,
              const std::string& host);

  // Ends the run `run_id` as "skipped", "lost" or "exited" (with the job's `exit_code`, -1
  // for none), or with "unclaimed" takes its claim back (no job started: the slot is free
  // again while no later claim covered it); only a "running" record changes. Never throws: an end
  // not written shows the run as "lost" once its owner no longer holds the lock (inspect).
  void finish(const std::string& run_id, const std::string& status, int exit_code) noexcept;

  const std::string& key() const { return key_; }

 private:
  redis::Topology& topology_;
  std::string name_;
  std::string key_;
  std::string lock_key_;
};

// What became of a hold that a run's job ran under, as RunHold saw it.
struct RunTrace {
  bool job_ended = false;    // the job ran and ended (its release records the end)
  int exit_code = -1;        // job_ended's
  bool not_started = false;  // the hold came too late, or the lock was busy: no job ran
  bool interrupted = false;  // a signal came before the job started
  bool released = false;     // a release was answered (it recorded the end)
};

// The hold of a run's job (exec's supervision), passed through to `inner` and traced in
// `trace` (which must outlive it), so that the run's end can be recorded where no release
// recorded it: a hold lost while the job ran, a job that never started.
class RunHold final : public Hold {
 public:
  RunHold(std::unique_ptr<Hold> inner, RunTrace& trace);
  Renewed renew() override;
  Released release(Millis keep) override;
  void job_ended(int exit_code) override;
  void job_not_started() override;
  void give_back_rest() noexcept override { inner_->give_back_rest(); }
  std::string lost_reason() const override { return inner_->lost_reason(); }

 private:
  std::unique_ptr<Hold> inner_;
  RunTrace& trace_;
};

// The end a run's record still needs once its job's supervision is over, as
// RunHistory::finish takes it ("" when the release recorded it): "skipped" (no job ran),
// "lost" (the hold was lost first), "exited" (the job ended, its release went unanswered),
// "unclaimed" (a signal came before the job started).
std::string unrecorded_end(const RunTrace& trace);

// `run_end` of lua/include/run_history.lua: "<run id> <status> [<exit code>]".
std::string run_end_arg(const std::string& run_id, const std::string& status, int exit_code);

}  // namespace rlock::prim
