#include "redis/script_args.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

#include "prim/lock_quorum.hpp"
#include "redis/quorum_rule.hpp"
#include "redis/script.hpp"

namespace rlock::redis {
namespace {

TEST_CASE("script args: each value at its named position, none left out") {
  using C = contract::lock_fence_raise;
  auto args = args_of<C>();
  args.set(C::kArgOwner, "o").set(C::kArgToken, "7");
  CHECK(args.list() == std::vector<std::string_view>{"7", "o"});
  CHECK_THROWS_AS(args.set(C::kArgOwner, "again"), std::logic_error);
  CHECK_THROWS_AS(args.set(C::kNumArgs, "past the end"), std::logic_error);
  auto missing = args_of<C>();
  missing.set(C::kArgOwner, "o");
  CHECK_THROWS_AS(missing.list(), std::logic_error);
}

TEST_CASE("script args: an argument that may be left out, and the rest of ARGV") {
  using C = contract::lock_force_release;
  auto args = args_of<C>();
  args.set(C::kArgChannel, "c").set(C::kArgClaimMs, "1").set(C::kArgReplyTtl, "2");
  CHECK_THROWS_AS(args.list(), std::logic_error);  // foreign_channel must be given
  args.set(C::kArgForeignChannel, "");
  CHECK(args.list().size() == C::kNumArgs - 1);  // the quorum's floor left out
}

// The quorum's lock rules (prim/lock_quorum.cpp) read positions from the same contracts;
// what is left to check is which script declares which rule.
TEST_CASE("script args: each lock script declares its quorum rule, the hand-offs one") {
  rlock::prim::use_lock_quorum_rules();
  const QuorumRule* grant = find_quorum_rule(scripts::lock_acquire.quorum);
  REQUIRE(grant != nullptr);
  CHECK(grant->lease_arg() == static_cast<int>(contract::lock_acquire::kArgLease) + 1);
  const QuorumRule* renew = find_quorum_rule(scripts::lock_renew.quorum);
  REQUIRE(renew != nullptr);
  CHECK(renew->lease_arg() == static_cast<int>(contract::lock_renew::kArgLease) + 1);
  const QuorumRule* release = find_quorum_rule(scripts::lock_release.quorum);
  REQUIRE(release != nullptr);
  CHECK(find_quorum_rule(scripts::lock_abandon.quorum) == release);
  CHECK(find_quorum_rule(scripts::lock_return.quorum) == release);
  CHECK(find_quorum_rule(scripts::lock_force_release.quorum) != nullptr);
}

}  // namespace
}  // namespace rlock::redis
