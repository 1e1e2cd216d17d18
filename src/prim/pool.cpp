#include "prim/pool.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include "prim/multi_hold.hpp"
#include "util/error.hpp"
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
  // `leave_at_once`: the members not taken are left as soon as one is; otherwise by
  // untaken()'s caller.
  PoolWait(std::vector<std::string> names, std::vector<std::unique_ptr<LockWaiter>> parts,
           bool leave_at_once)
      : names_(std::move(names)),
        parts_(std::move(parts)),
        touched_(parts_.size(), false),
        self_blocked_(parts_.size(), false),
        leave_at_once_(leave_at_once) {}

  Step attempt(Mode mode, Millis wait_left) override {
    Step out;
    out.holder_ttl = Millis(-1);
    for (size_t i = 0; i < parts_.size(); ++i) {
      if (self_blocked_[i]) continue;
      // A try queues nothing and, busy, takes nothing: nothing to give back for it.
      if (mode != Mode::kTry) touched_[i] = true;
      Step s;
      try {
        s = parts_[i]->attempt(mode, wait_left);
      } catch (const WaitsForItself&) {
        // Held by a process this one runs under: never this request's (its script left
        // that queue), but another member may be. Refused only when every one is so.
        self_blocked_[i] = true;
        touched_[i] = false;
        if (std::count(self_blocked_.begin(), self_blocked_.end(), true) ==
            static_cast<long>(parts_.size()))
          throw;
        continue;
      }
      if (s.acquired) {
        taken_ = i;
        if (leave_at_once_) leave_others();
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
  // The requests of the members not taken that may be queued or granted, to be given up.
  std::vector<std::unique_ptr<LockWaiter>> untaken() {
    std::vector<std::unique_ptr<LockWaiter>> out;
    for (size_t j = 0; j < parts_.size(); ++j) {
      if (j != taken_ && touched_[j]) out.push_back(std::move(parts_[j]));
    }
    return out;
  }
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
  std::vector<bool> touched_;       // attempted in a mode that may queue or be granted
  std::vector<bool> self_blocked_;  // refused as waiting for itself (see WaitsForItself)
  bool leave_at_once_;
  std::optional<size_t> taken_;
};

}  // namespace

Pool::Pool(redis::Topology& topology, const KeyLayout& layout, std::vector<std::string> names,
           size_t count)
    : topology_(topology), names_(std::move(names)), count_(count), order_(names_.size()) {
  for (const auto& n : names_) locks_.push_back(std::make_unique<Lock>(topology, layout, n));
  std::iota(order_.begin(), order_.end(), size_t{0});
  // One member: the names as given, the first preferred. Several: sorted bytewise, as a
  // MultiLock takes its names (see the class comment).
  if (count_ > 1) {
    std::sort(order_.begin(), order_.end(),
              [this](size_t a, size_t b) { return names_[a] < names_[b]; });
  }
}

void Pool::set_ancestry(const std::vector<AncestorHold>& holds) {
  for (auto& l : locks_) l->set_ancestry(holds);
}

void Pool::set_note(const std::string& note) {
  for (auto& l : locks_) l->set_note(note);
}

void Pool::Pending::leave() noexcept {
  for (auto& p : parts) p->give_up();
  parts.clear();
}

Pool::~Pool() { pending_->leave(); }

Pool::Stage Pool::take_one(const std::vector<size_t>& eligible, bool last_stage,
                           const std::string& owner, Millis lease, Deadline until,
                           const WaitHooks& hooks, HoldKind kind, LockMode mode) {
  pending_->leave();  // what an earlier acquisition left (a hold that came too late runs again)
  const std::string wait_id = random_hex(8);
  std::vector<std::string> names;
  std::vector<std::unique_ptr<LockWaiter>> parts;
  for (size_t i : eligible) {
    names.push_back(names_[i]);
    parts.push_back(locks_[i]->waiter(owner, lease, kind, mode, wait_id));
  }
  // The last member's wait leaves the other queues once the job started (or when the pool
  // ends, see Pending): off the hand-off's path. Meanwhile this waiter may be granted one
  // of them, which it then gives back to that member's next waiter. An earlier member's
  // wait leaves them at once: the next wait queues on some of them again.
  const bool last = last_stage;
  PoolWait wait(std::move(names), std::move(parts), !last);
  Stage out;
  try {
    out.outcome = wait_for(topology_, wait, until, hooks);
  } catch (...) {
    // A refusal of one member (SELF, a bad type) leaves the others' queues too.
    wait.give_up();
    throw;
  }
  if (out.outcome == WaitOutcome::kAcquired) {
    out.index = eligible[*wait.taken()];
    out.held = std::get<Held>(wait.result(*wait.taken()));
    if (last) {
      pending_->parts = wait.untaken();
      topology_.after_start([pending = pending_] { pending->leave(); });
    }
  } else {
    out.busy = wait.busy();
    out.busy.interrupted = out.outcome == WaitOutcome::kInterrupted;
  }
  return out;
}

bool Pool::renew_kept(std::vector<Kept>& kept) {
  for (auto k = kept.begin(); k != kept.end(); ++k) {
    try {
      if (k->hold->renew() == Hold::Renewed::kLost) {
        kept.erase(k);  // no longer ours: not given back
        return false;
      }
    } catch (const Error&) {
      // Redis did not answer: the member is ours until its deadline, and retried next tick.
      if (SteadyClock::now() >= k->hold->deadline()) return false;
    }
  }
  return true;
}

void Pool::give_back(const std::string& owner, const std::vector<Kept>& kept,
                     HoldKind kind) noexcept {
  for (auto k = kept.rbegin(); k != kept.rend(); ++k)
    locks_[k->index]->give_back(owner, k->held, kind);
}

MultiLock::Outcome Pool::acquire(const std::string& owner, Millis lease, Deadline until,
                                 const WaitHooks& hooks, HoldKind kind, LockMode mode) {
  const size_t n = names_.size();
  while (true) {
    std::vector<Kept> kept;
    bool lost = false, waited = false;
    std::optional<MultiLock::Refused> refused;
    for (size_t s = 0; s < count_ && !refused; ++s) {
      // Canonical order: after the member at position p, one of those after it that leaves
      // enough members behind it for the rest.
      const size_t from = kept.empty() ? 0 : position(kept.back().index) + 1;
      std::vector<size_t> eligible(
          order_.begin() + static_cast<std::ptrdiff_t>(from),
          order_.begin() + static_cast<std::ptrdiff_t>(n - count_ + s + 1));
      WaitHooks h = hooks;
      if (!kept.empty()) {
        h.tick_every = std::max(lease / 4, Millis(1));
        h.on_tick = [&kept, &lost] { return !(lost = !renew_kept(kept)); };
        h.on_wait = [&waited, shown = hooks.on_wait](const Waitable::Step& busy, Millis left) {
          waited = true;
          if (shown) shown(busy, left);
        };
      }
      Stage got;
      try {
        got = take_one(eligible, s + 1 == count_, owner, lease, until, h, kind, mode);
      } catch (...) {
        give_back(owner, kept, kind);
        throw;
      }
      if (got.outcome != WaitOutcome::kAcquired) {
        give_back(owner, kept, kind);
        kept.clear();  // given back once: a `lock` hold's second give-back would count down
        refused = MultiLock::Refused{names_[eligible.front()], got.busy};
        break;
      }
      kept.push_back({got.index, got.held, locks_[got.index]->hold(owner, lease, got.held, kind)});
    }
    // A member kept while a later one was waited for may have been lost after its last
    // renewal: renewed once more before anything runs on it; lost, the whole starts again.
    if (lost || (!refused && kept.size() > 1 && waited && !renew_kept(kept))) {
      give_back(owner, kept, kind);
      continue;
    }
    if (refused) return std::move(*refused);
    return acquired(std::move(kept));
  }
}

MultiLock::Outcome Pool::acquired(std::vector<Kept> kept) {
  MultiLock::Acquired out;
  for (const auto& k : kept) out.taken.push_back({names_[k.index], k.held});
  if (kept.size() == 1) {
    out.hold = std::move(kept.front().hold);
    return out;
  }
  std::vector<MultiHold::Member> holds;
  for (auto& k : kept) holds.push_back({names_[k.index], std::move(k.hold)});
  out.hold = std::make_unique<MultiHold>(std::move(holds), out.taken.front().held.fence);
  return out;
}

size_t Pool::position(size_t index) const {
  return static_cast<size_t>(std::find(order_.begin(), order_.end(), index) - order_.begin());
}

void Pool::give_back(const std::string& owner, const std::vector<MultiLock::Taken>& taken,
                     HoldKind kind) noexcept {
  for (const auto& t : taken) {
    auto i = std::find(names_.begin(), names_.end(), t.name) - names_.begin();
    locks_[static_cast<size_t>(i)]->give_back(owner, t.held, kind);
  }
}

}  // namespace rlock::prim
