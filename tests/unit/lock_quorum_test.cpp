// When a lock's request on a quorum has its outcome (QuorumRule::decided, the rules of
// prim/lock_quorum.cpp), from the tally of the answers so far.
#include "prim/lock_quorum.hpp"

#include <doctest/doctest.h>

#include "redis/quorum_rule.hpp"

namespace rlock::redis {
namespace {

const QuorumRule& lock_rule(const char* name) {
  prim::use_lock_quorum_rules();
  const QuorumRule* r = find_quorum_rule(name);
  REQUIRE(r != nullptr);
  return *r;
}

TEST_CASE("lock quorum rules: registered by name, and nothing else is") {
  prim::use_lock_quorum_rules();
  for (const char* name : {"grant", "renew", "release", "union"}) {
    CAPTURE(name);
    CHECK(find_quorum_rule(name) != nullptr);
  }
  CHECK(find_quorum_rule("") == nullptr);
  CHECK(find_quorum_rule("semaphore") == nullptr);
  CHECK(lock_rule("grant").lease_arg() > 0);
  CHECK(lock_rule("renew").lease_arg() > 0);
  CHECK(lock_rule("release").gives_back());
  CHECK(lock_rule("union").gives_back());
  CHECK_FALSE(lock_rule("grant").gives_back());
}

TEST_CASE("lock quorum rules: when 5 members' answers decide") {
  struct Case {
    const char* rule;
    Tally t;
    bool decided;  // now (true) or not yet known / later (false)
  };
  auto tally_of = [](size_t answered, size_t counting, size_t yes, size_t yes_counting) {
    Tally t;
    t.answered = answered;
    t.counting = counting;
    t.yes = yes;
    t.yes_counting = yes_counting;
    return t;
  };
  const Case cases[] = {
      // a majority of counting members said yes
      {"grant", tally_of(3, 3, 3, 3), true},
      {"renew", tally_of(3, 3, 3, 3), true},
      {"release", tally_of(3, 3, 3, 3), true},
      // a yes from a member not counted yet (the restart rule) decides no grant...
      {"grant", tally_of(3, 2, 3, 2), false},
      {"renew", tally_of(3, 2, 3, 2), false},
      // ...but a release counts every member's answer
      {"release", tally_of(3, 2, 3, 2), true},
      // so many said no that no majority can say yes
      {"renew", tally_of(3, 3, 0, 0), true},
      {"release", tally_of(3, 3, 0, 0), true},
      // too few answers either way
      {"renew", tally_of(2, 2, 1, 1), false},
      {"release", tally_of(2, 2, 1, 1), false},
      // any reply from a majority
      {"union", tally_of(3, 3, 3, 3), true},
      {"union", tally_of(2, 2, 2, 2), false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.rule);
    CAPTURE(c.t.answered);
    CAPTURE(c.t.yes_counting);
    std::optional<Deadline> state;
    const Deadline start = SteadyClock::now();
    const std::optional<Deadline> by = lock_rule(c.rule).decided(c.t, 5, 3, start, state);
    CHECK((by.has_value() && *by <= SteadyClock::now()) == c.decided);
  }
}

TEST_CASE("lock quorum rules: a busy majority or a split grant waits a while for the others") {
  const QuorumRule& grant = lock_rule("grant");
  Tally busy;  // three of five counting members refused, two have not answered
  busy.answered = 3;
  busy.counting = 3;
  std::optional<Deadline> state;
  const Deadline start = SteadyClock::now();
  const std::optional<Deadline> by = grant.decided(busy, 5, 3, start, state);
  REQUIRE(by.has_value());
  CHECK(*by > SteadyClock::now());
  REQUIRE(state.has_value());
  // The patience is set once: later answers keep the same end.
  Tally split = busy;
  split.answered = split.counting = 4;
  split.yes = split.yes_counting = 2;
  CHECK(grant.decided(split, 5, 3, start, state) == by);
  // Every member answered busy: decided now.
  Tally all_busy;
  all_busy.answered = all_busy.counting = 5;
  std::optional<Deadline> fresh;
  const std::optional<Deadline> now = grant.decided(all_busy, 5, 3, start, fresh);
  REQUIRE(now.has_value());
  CHECK(*now <= SteadyClock::now());
}

}  // namespace
}  // namespace rlock::redis
