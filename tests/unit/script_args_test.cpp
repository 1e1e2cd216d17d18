#include "redis/script_args.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

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

// The quorum finds a lock script's lease, owner, keys and token floor by position
// (redis/quorum_rule.cpp): they must be where the scripts declare them.
TEST_CASE("script args: the quorum's positions are the lock scripts' own") {
  const QuorumRule* grant = find_quorum_rule(scripts::lock_acquire.quorum);
  REQUIRE(grant != nullptr);
  using A = contract::lock_acquire;
  CHECK(grant->lease_arg == A::kArgLease + 1);
  CHECK(grant->owner_arg == A::kArgOwner + 1);
  CHECK(grant->lock_key == A::kKeyLock + 1);
  CHECK(grant->fence_key == A::kKeyFence + 1);
  CHECK(grant->floor_arg == A::kArgFloor + 1);
  const QuorumRule* renew = find_quorum_rule(scripts::lock_renew.quorum);
  REQUIRE(renew != nullptr);
  CHECK(renew->lease_arg == contract::lock_renew::kArgLease + 1);
  const QuorumRule* release = find_quorum_rule(scripts::lock_release.quorum);
  REQUIRE(release != nullptr);
  CHECK(release->floor_arg == contract::lock_release::kArgFloor + 1);
  // One rule for the three scripts that may hand the lock on: the floor in one place.
  CHECK(find_quorum_rule(scripts::lock_abandon.quorum) == release);
  CHECK(find_quorum_rule(scripts::lock_return.quorum) == release);
  CHECK(contract::lock_abandon::kArgFloor == contract::lock_release::kArgFloor);
  CHECK(contract::lock_return::kArgFloor == contract::lock_release::kArgFloor);
  const QuorumRule* force = find_quorum_rule(scripts::lock_force_release.quorum);
  REQUIRE(force != nullptr);
  CHECK(force->floor_arg == contract::lock_force_release::kArgFloor + 1);
}

}  // namespace
}  // namespace rlock::redis
