#include "prim/multi_lock.hpp"

#include <algorithm>
#include <numeric>

#include "prim/multi_hold.hpp"
#include "util/error.hpp"

namespace rlock::prim {
namespace {

// Renewals of the locks already held while a later one is waited for: often enough that
// one or two can fail (Redis away for a moment) before a lease could run out.
Millis renew_every(Millis lease) { return std::max(lease / 4, Millis(1)); }

// Renews the first `count` locks `members` holds; false when one is lost (it is dropped
// from `members`: a lock that is no longer ours is not given back) or was not confirmed by
// its deadline.
template <typename Members>
bool renew_held(Members& members, size_t count) {
  for (auto m = members.begin(); m != members.begin() + static_cast<std::ptrdiff_t>(count); ++m) {
    try {
      if (m->hold->renew() == Hold::Renewed::kLost) {
        members.erase(m);
        return false;
      }
    } catch (const Error&) {
      // Redis did not answer: the lock is ours until its deadline, and retried next tick.
      if (SteadyClock::now() >= m->hold->deadline()) return false;
    }
  }
  return true;
}

}  // namespace

MultiLock::MultiLock(redis::Topology& topology, const KeyLayout& layout,
                     std::vector<std::string> names)
    : names_(std::move(names)), order_(names_.size()) {
  for (const auto& n : names_) locks_.push_back(std::make_unique<Lock>(topology, layout, n));
  std::iota(order_.begin(), order_.end(), size_t{0});
  // std::string compares bytes as unsigned char: the order of `LC_ALL=C sort`.
  std::sort(order_.begin(), order_.end(),
            [this](size_t a, size_t b) { return names_[a] < names_[b]; });
}

void MultiLock::set_ancestry(const std::vector<AncestorHold>& holds) {
  for (auto& l : locks_) l->set_ancestry(holds);
}

void MultiLock::set_note(const std::string& note) {
  for (auto& l : locks_) l->set_note(note);
}

void MultiLock::set_queue_policy(const QueuePolicy& policy) {
  for (auto& l : locks_) l->set_queue_policy(policy);
}

void MultiLock::set_run(const std::string& run_id) {
  for (auto& l : locks_) l->set_run(run_id);
}

MultiLock::Outcome MultiLock::acquire(const std::string& owner, Millis lease, Deadline until,
                                      const HooksFor& hooks, HoldKind kind, LockMode mode) {
  while (true) {
    std::vector<Member> members;
    std::optional<Refused> refused;
    // A pass that lost an earlier lock gave everything back: start again. Once `until` has
    // passed, each lock gets one attempt and no wait, so nothing can be lost meanwhile.
    if (!take_all(owner, lease, until, hooks, kind, mode, members, refused)) continue;
    if (refused) return std::move(*refused);
    Acquired out;
    for (size_t i = 0; i < names_.size(); ++i) {
      auto m = std::find_if(members.begin(), members.end(),
                            [i](const Member& x) { return x.index == i; });
      out.taken.push_back({names_[i], m->held});
    }
    if (members.size() == 1) {
      out.hold = std::move(members.front().hold);
      return out;
    }
    std::vector<MultiHold::Member> holds;
    for (auto& m : members) holds.push_back({names_[m.index], std::move(m.hold)});
    out.hold = std::make_unique<MultiHold>(std::move(holds), out.taken.front().held.fence);
    return out;
  }
}

bool MultiLock::take_all(const std::string& owner, Millis lease, Deadline until,
                         const HooksFor& hooks, HoldKind kind, LockMode mode,
                         std::vector<Member>& members, std::optional<Refused>& refused) {
  bool waited = false;
  SteadyClock::time_point first_held;
  for (size_t index : order_) {
    bool lost = false;
    WaitHooks h = hooks(names_[index]);
    if (!members.empty()) {
      h.tick_every = renew_every(lease);
      h.on_tick = [&members, &lost] {
        lost = !renew_held(members, members.size());
        return !lost;
      };
      h.on_wait = [&waited, shown = std::move(h.on_wait)](const Waitable::Step& busy, Millis left) {
        waited = true;
        if (shown) shown(busy, left);
      };
    }
    Acquisition a;
    try {
      a = locks_[index]->acquire(owner, lease, until, h, kind, mode);
    } catch (...) {
      give_back(owner, members, kind);
      throw;
    }
    if (const auto* busy = std::get_if<Busy>(&a)) {
      give_back(owner, members, kind);
      if (lost) return false;
      refused = Refused{names_[index], *busy};
      return true;
    }
    const auto& held = std::get<Held>(a);
    members.push_back({index, held, locks_[index]->hold(owner, lease, held, kind)});
    if (members.size() == 1) first_held = SteadyClock::now();
  }
  // An earlier lock may have been lost after its last renewal while a later one was waited
  // for (forced, deleted, or run out while this process was stopped): nothing is reported
  // or run on it before it is renewed once more, when a wait came between or its renewal
  // is due. Lost: everything is given back and the whole starts again.
  if (members.size() > 1 && (waited || SteadyClock::now() - first_held >= renew_every(lease)) &&
      !renew_held(members, members.size() - 1)) {
    give_back(owner, members, kind);
    return false;
  }
  return true;
}

void MultiLock::give_back(const std::string& owner, const std::vector<Member>& members,
                          HoldKind kind) noexcept {
  for (auto m = members.rbegin(); m != members.rend(); ++m)
    locks_[m->index]->give_back(owner, m->held, kind);
}

void MultiLock::give_back(const std::string& owner, const std::vector<Taken>& taken,
                          HoldKind kind) noexcept {
  // The last taken first, as a release of the whole does.
  for (size_t i = order_.size(); i-- > 0;) {
    size_t index = order_[i];
    auto t = std::find_if(taken.begin(), taken.end(),
                          [this, index](const Taken& x) { return x.name == names_[index]; });
    if (t != taken.end()) locks_[index]->give_back(owner, t->held, kind);
  }
}

}  // namespace rlock::prim
