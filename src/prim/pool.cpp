#include "prim/pool.hpp"

#include <algorithm>

#include "util/owner.hpp"

namespace rlock::prim {
namespace {

// The earlier of two expiries, where -1 is none.
Millis sooner(Millis a, Millis b) {
  if (a.count() < 0) return b;
  if (b.count() < 0) return a;
  return std::min(a, b);
}

// One wait for any of a pool's members: one request per member under one wait id, each
// attempted in turn, in the member's own queue. The first attempt that acquires ends the
// pass; the other members' requests are given up at once.
class PoolWait : public Waitable {
 public:
  PoolWait(std::vector<std::string> names, std::vector<std::unique_ptr<LockWaiter>> parts)
      : names_(std::move(names)), parts_(std::move(parts)), touched_(parts_.size(), false) {}

  Step attempt(Mode mode, Millis wait_left) override {
    Step out;
    out.holder_ttl = Millis(-1);
    for (size_t i = 0; i < parts_.size(); ++i) {
      // A try queues nothing and, busy, takes nothing: nothing to give back for it.
      if (mode != Mode::kTry) touched_[i] = true;
      Step s = parts_[i]->attempt(mode, wait_left);
      if (s.acquired) {
        taken_ = i;
        leave_others();
        return s;
      }
      merge(out, s, i);
    }
    return out;
  }

  std::vector<std::string> channels() const override {
    std::vector<std::string> out;
    for (const auto& p : parts_) {
      auto own = p->channels();
      // Two a member: its release and grant channels ([0] and [1] of each, see Waitable).
      own.resize(2);
      out.insert(out.end(), own.begin(), own.end());
    }
    return out;
  }

  bool announces_on(const std::string& channel) const override {
    return std::any_of(parts_.begin(), parts_.end(),
                       [&](const auto& p) { return p->announces_on(channel); });
  }

  std::vector<std::string> classic_channels() const override {
    std::vector<std::string> out;
    for (const auto& p : parts_) {
      auto own = p->classic_channels();
      out.insert(out.end(), own.begin(), own.end());
    }
    return out;
  }

  void give_up() noexcept override {
    for (size_t i = 0; i < parts_.size(); ++i) parts_[i]->give_up();
  }

  // The member taken, once an attempt acquired.
  std::optional<size_t> taken() const { return taken_; }
  Acquisition result(size_t i) const { return parts_[i]->result(); }

  // Every member's busy result as one: their holders, the soonest expiry.
  Busy busy() const {
    Busy all;
    all.ttl = Millis(-1);
    for (const auto& p : parts_) {
      Acquisition a = p->result();
      const auto* b = std::get_if<Busy>(&a);
      if (!b) continue;
      all.holders.insert(all.holders.end(), b->holders.begin(), b->holders.end());
      all.holders_total += b->holders_total;
      all.ttl = sooner(all.ttl, b->ttl);
      all.same_owner_exec = all.same_owner_exec || b->same_owner_exec;
    }
    return all;
  }

 private:
  // The requests of the members not taken leave their queues; a grant one received meanwhile
  // goes to that member's next waiter (lua/lock_abandon.lua).
  void leave_others() noexcept {
    for (size_t j = 0; j < parts_.size(); ++j) {
      if (j != taken_ && touched_[j]) parts_[j]->give_up();
    }
  }

  void merge(Step& out, const Step& s, size_t i) const {
    out.holder_ttl = sooner(out.holder_ttl, s.holder_ttl);
    out.last_ttl = std::max({out.last_ttl, s.holder_ttl, s.last_ttl});
    out.ttl_is_lease = out.ttl_is_lease && s.ttl_is_lease;
    if (s.ahead >= 0) out.ahead = out.ahead < 0 ? s.ahead : std::min(out.ahead, s.ahead);
    const std::string sep = out.holders.empty() ? "" : "; ";
    out.holders += sep + "'" + names_[i] + "': " + (s.holders.empty() ? "nobody" : s.holders);
    out.summary += (out.summary.empty() ? "" : ", ") + names_[i] + " " + s.summary;
  }

  std::vector<std::string> names_;
  std::vector<std::unique_ptr<LockWaiter>> parts_;
  std::vector<bool> touched_;  // attempted in a mode that may queue or be granted
  std::optional<size_t> taken_;
};

}  // namespace

Pool::Pool(redis::Topology& topology, const KeyLayout& layout, std::vector<std::string> names)
    : topology_(topology), names_(std::move(names)) {
  for (const auto& n : names_) locks_.push_back(std::make_unique<Lock>(topology, layout, n));
}

void Pool::set_ancestry(const std::vector<AncestorHold>& holds) {
  for (auto& l : locks_) l->set_ancestry(holds);
}

MultiLock::Outcome Pool::acquire(const std::string& owner, Millis lease, Deadline until,
                                 const WaitHooks& hooks, HoldKind kind, LockMode mode) {
  const std::string wait_id = random_hex(8);
  std::vector<std::unique_ptr<LockWaiter>> parts;
  for (auto& l : locks_) parts.push_back(l->waiter(owner, lease, kind, mode, wait_id));
  PoolWait wait(names_, std::move(parts));
  WaitOutcome outcome;
  try {
    outcome = wait_for(topology_, wait, until, hooks);
  } catch (...) {
    // A refusal of one member (SELF, a bad type) leaves the others' queues too.
    wait.give_up();
    throw;
  }
  if (outcome == WaitOutcome::kAcquired) {
    const size_t i = *wait.taken();
    const Held held = std::get<Held>(wait.result(i));
    MultiLock::Acquired out;
    out.taken.push_back({names_[i], held});
    out.hold = locks_[i]->hold(owner, lease, held, kind);
    return out;
  }
  Busy busy = wait.busy();
  busy.interrupted = outcome == WaitOutcome::kInterrupted;
  return MultiLock::Refused{names_.front(), busy};
}

void Pool::give_back(const std::string& owner, const std::vector<MultiLock::Taken>& taken,
                     HoldKind kind) noexcept {
  for (const auto& t : taken) {
    auto i = std::find(names_.begin(), names_.end(), t.name) - names_.begin();
    locks_[static_cast<size_t>(i)]->give_back(owner, t.held, kind);
  }
}

}  // namespace rlock::prim
