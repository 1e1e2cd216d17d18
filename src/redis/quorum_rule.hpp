#pragma once

#include <string>
#include <string_view>

namespace rlock::redis {

// How the members' replies to one script make a quorum's reply: the part of a script's
// contract that only a quorum needs, declared by the script itself (`-- @quorum RULE` in
// its .lua file, Script::quorum) so that the quorum stays generic and the primitive has
// one code path on every topology.
struct QuorumRule {
  enum class Kind {
    // {1, count, fence, pttl, fresh} = granted; any other array = not granted (its busy
    // reply is passed on). Held iff a majority of members that count granted within the
    // lease (ARGV[lease_arg]) minus the drift; the token is the maximum of the grants'
    // (element fence_at), written back to KEYS[fence_key] on a majority before the reply
    // is returned (made exactly that where ARGV[owner_arg] holds KEYS[lock_key], see
    // lua/lock_fence_raise.lua); its pttl becomes the one a majority has at least, counted
    // from the first send and never more than the lease asked for unless a member reports
    // more. Granted by a majority whose answers or write-back came after the lease less the
    // drift ran out, or whose write-back no majority confirmed: UnusableGrantError (nobody
    // holds it; the caller gives back what was granted). Granted by fewer than a majority:
    // element 0 becomes -2 (the caller gives back what the request took, by its id).
    kGrant,
    // An integer, > 0 = renewed (ms left). Renewed iff a majority that counts renewed: the
    // reply is the majority's shortest remaining time minus the elapsed time; 0 once a
    // majority can no longer say so; UnavailableError while it still might.
    kRenew,
    // {1, ...} = done. The first {1, ...} reply when a majority answered so, else the first
    // other reply of a majority that answered.
    kRelease,
    // Any reply: the longest array of a majority that answered (holders released).
    kUnion,
  };
  Kind kind;
  int lease_arg = 0;  // ARGV index of the lease asked for (0: none; members all count)
  int fence_key = 0;  // kGrant: KEYS index of the fencing token
  int fence_at = 0;   // kGrant: reply element of the token
  int lock_key = 0;   // kGrant: KEYS index of the lock hash (owner -> count)
  int owner_arg = 0;  // kGrant: ARGV index of the owner
  // ARGV index of the least fencing token the script may hand out (0: none). The quorum
  // fills it with the same proposal for every member (Quorum::fence_floor), so that members
  // that grant agree on the token and a majority has it without its write-back.
  int floor_arg = 0;
};

// What to add to the member check's ACL refusal `refusal` (lua/quorum_member.lua) when it
// decides the quorum's reply. Redis refuses a script whose declared keys the user may not
// touch before it runs, in words that differ between servers (Redis 7.0: "...one of the
// keys used as arguments", Redis 8.0 and Valkey 8.1: "No permissions to access a key"), so
// only its code word and what else was refused tell: when the request's own script (the
// same command, the caller's keys) was not refused, the check's keys were. The check's own
// refusals ("NOPERM rlock needs ...") name what they need and get nothing added.
std::string member_check_refusal_note(std::string_view refusal, bool request_refused);

// The rule a script declares ("grant", "renew", "release", "union"); nullptr for none.
const QuorumRule* find_quorum_rule(std::string_view name);

}  // namespace rlock::redis
