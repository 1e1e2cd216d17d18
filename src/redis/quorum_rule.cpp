#include "redis/quorum_rule.hpp"

namespace rlock::redis {

const QuorumRule* find_quorum_rule(std::string_view name) {
  // The lock scripts' layouts (lua/lock_*.lua): ARGV[2] the lease, KEYS[2] the fence,
  // reply element 2 the token, KEYS[1] the lock hash, ARGV[1] the owner; the token floor
  // is the last ARGV of lock_acquire (13), lock_release (11) and lock_force_release (5).
  static const QuorumRule kGrant{QuorumRule::Kind::kGrant, 2, 2, 2, 1, 1, 13};
  static const QuorumRule kRenew{QuorumRule::Kind::kRenew, 2, 0, 0};
  static const QuorumRule kRelease{QuorumRule::Kind::kRelease, 0, 0, 0, 0, 0, 11};
  static const QuorumRule kUnion{QuorumRule::Kind::kUnion, 0, 0, 0, 0, 0, 5};
  if (name == "grant") return &kGrant;
  if (name == "renew") return &kRenew;
  if (name == "release") return &kRelease;
  if (name == "union") return &kUnion;
  return nullptr;
}

std::string member_check_refusal_note(std::string_view refusal, bool request_refused) {
  const bool acl = refusal.substr(0, refusal.find(' ')) == "NOPERM";
  if (!acl || request_refused || refusal.starts_with("NOPERM rlock needs ")) return "";
  return " (the quorum's own keys rlock:quorum:*, the same whatever --prefix)";
}

}  // namespace rlock::redis
