// What a lock's requests combine to on a quorum (redis-quorum://): the rules the lock
// scripts declare (`-- @quorum grant|renew|release|union` in lua/lock_*.lua), given to the
// quorum (redis/quorum_rule.hpp) by the lock that sends them.
#pragma once

namespace rlock::prim {

// Registers the lock scripts' quorum rules, once per process; every Lock does it before
// its first request, so that no request of a lock meets a quorum without them.
//   grant: {1, count, fence, pttl, fresh} = granted; any other array = not granted (its
//     busy reply is passed on). Held iff a majority of members that count granted within
//     the lease minus the drift; the token is the maximum of the grants', written back to
//     the lock's fence key on a majority before the reply is returned (made exactly that
//     where the owner holds the lock, see lua/lock_fence_raise.lua); its pttl becomes the
//     one a majority has at least, counted from the first send and never more than the
//     lease asked for unless a member reports more. Granted by a majority whose answers or
//     write-back came after the lease less the drift ran out, or whose write-back no
//     majority confirmed: UnusableGrantError (nobody holds it; the caller gives back what
//     was granted). Granted by fewer than a majority: element 0 becomes -2 (the caller
//     gives back what the request took, by its id).
//   renew: an integer, > 0 = renewed (ms left). Renewed iff a majority that counts
//     renewed: the reply is the majority's shortest remaining time minus the elapsed time;
//     0 once a majority can no longer say so; UnavailableError while it still might.
//   release: {1, ...} = done. The first {1, ...} reply when a majority answered so, else
//     the first other reply of a majority that answered.
//   union: any reply; the longest array of a majority that answered (holders released).
// Every one but renew fills the least fencing token the script may hand out with the same
// proposal for every member, so that members that grant agree on the token and a majority
// has it without its write-back.
void use_lock_quorum_rules();

}  // namespace rlock::prim
