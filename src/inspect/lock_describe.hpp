#pragma once

#include <optional>
#include <string>

#include "inspect/object_type.hpp"
#include "prim/key_layout.hpp"
#include "redis/topology.hpp"

namespace rlock::inspect {

// One lock as `rlock inspect` shows it: its JSON object (holders with "note" and
// "acquired_at", waiters with "waiting_since" and "note"), read with inspect's own reads
// and decoder in one round trip to the server of its hash tag. nullopt when nobody holds
// it. On a quorum each member is read: the object of the first member whose holders
// (owners, counts, notes) a majority of the members agree on, tagged with "member";
// nullopt when no majority agrees (or none holds it). Throws what a refused or failed
// read throws (UnavailableError when fewer than a majority of a quorum answer).
std::optional<Json> describe_lock(redis::Topology& topology, const prim::KeyLayout& layout,
                                  const std::string& name);

}  // namespace rlock::inspect
