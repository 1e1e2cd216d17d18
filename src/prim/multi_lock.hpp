#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "prim/hold.hpp"
#include "prim/lock.hpp"

namespace rlock::prim {

// Several locks taken as one: all of them or none. Each is a Lock of its own (its own keys,
// queue and hash tag, so names in different cluster slots need nothing special).
//
// They are taken one at a time in one canonical order (the names sorted bytewise) and
// the earlier ones are kept, renewed, while a later one is waited for. Two requests that
// name the same locks in different orders therefore queue in the same order and cannot
// deadlock; each lock's queue is FIFO, so a waiter is served in its turn on each lock
// (nobody starves while holds end or their leases run out). The price: while it waits for
// a later lock it keeps the earlier ones from everyone else.
class MultiLock {
 public:
  // `names`: distinct, valid names, in the order the user gave them.
  MultiLock(redis::Topology& topology, const KeyLayout& layout, std::vector<std::string> names);

  struct Taken {
    std::string name;
    Held held;
  };
  // All held: `taken` in the order the names were given, `hold` keeps them all (for exec's
  // supervision), renewed up to now. For one name it is that lock's own hold, so that a
  // single lock is renewed, lost and reported exactly as a Lock's hold is.
  struct Acquired {
    std::vector<Taken> taken;
    std::unique_ptr<Hold> hold;
  };
  // None held: `name` is the lock found busy (or being waited for when the wait ended).
  struct Refused {
    std::string name;
    Busy busy;
  };
  using Outcome = std::variant<Acquired, Refused>;

  // What each lock's wait gets (the wait line and -v, which name the lock; the signals).
  using HooksFor = std::function<WaitHooks(const std::string& name)>;

  // Takes every lock, waiting until `until` (see Lock::acquire) for each in turn. On busy,
  // a signal, a lost reply or an error nothing stays held: what was taken is given back. An
  // earlier lock lost while a later one is waited for (forced, or its lease ran out with
  // Redis unreachable) is given up with the others, and the whole starts again while
  // `until` allows. Throws what Lock::acquire throws.
  Outcome acquire(const std::string& owner, Millis lease, Deadline until, const HooksFor& hooks,
                  HoldKind kind = HoldKind::kLock, LockMode mode = LockMode::kExclusive);

  // Gives back every lock of `taken` (see Lock::give_back). Never throws.
  void give_back(const std::string& owner, const std::vector<Taken>& taken, HoldKind kind) noexcept;

  // See Lock::set_ancestry; for every lock.
  void set_ancestry(const std::vector<AncestorHold>& holds);
  // See Lock::set_note; for every lock.
  void set_note(const std::string& note);
  // See Lock::set_queue_policy; for every lock.
  void set_queue_policy(const QueuePolicy& policy);

  // See Lock::set_run; for every lock.
  void set_run(const std::string& run_id);

  // The names in the order given.
  const std::vector<std::string>& names() const { return names_; }

 private:
  struct Member {
    size_t index;  // into names_ and locks_
    Held held;
    std::unique_ptr<Hold> hold;
  };
  // One pass over the locks in canonical order; `members` gets what it took. Returns false
  // when an earlier lock was lost during a later wait (then `refused` is unset).
  bool take_all(const std::string& owner, Millis lease, Deadline until, const HooksFor& hooks,
                HoldKind kind, LockMode mode, std::vector<Member>& members,
                std::optional<Refused>& refused);
  void give_back(const std::string& owner, const std::vector<Member>& members,
                 HoldKind kind) noexcept;

  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Lock>> locks_;  // as names_; a Hold refers to its Lock
  std::vector<size_t> order_;                 // indices into locks_, canonical order
};

}  // namespace rlock::prim
