#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "inspect/object_type.hpp"
#include "prim/key_layout.hpp"
#include "redis/topology.hpp"

namespace rlock::inspect {

// One decoded object and its type.
struct Shown {
  const ObjectType* type;
  std::string name;
  Decoded decoded;
};

// Lists the objects of `types` whose names match `name_glob`, one SCAN batch at a time:
// the next SCAN call, one TIME and the reads of a batch go out in one pipelined write,
// sent as soon as the SCAN reply that found the batch arrives (while the previous batch's
// replies are still being read), and `emit` (on a second thread, one call at a time, in
// order) gets the batch's objects sorted by name, then type. At most three batches are
// in memory, whatever the number of objects.
// Objects come in SCAN order between batches. A key SCAN returns twice within a batch is
// shown once; across batches SCAN repeats a key only while the server resizes its key
// table during the listing, and such a key is then shown twice: an exact filter would cost
// memory in proportion to the number of keys (8-byte key hashes in an open-addressing set
// at half load: 16 MiB per million keys, the whole budget at 1,000,000 objects, and
// unbounded beyond), for a repeat that only a concurrent resize causes. Throws DataError when the
// server's SCAN does not finish within a bound derived from DBSIZE, and what a refused command
// throws (ReplyError) when SCAN is refused, possibly after emitting some batches.
void scan_objects(redis::Topology& topology, const prim::KeyLayout& layout,
                  std::string_view name_glob, const std::vector<const ObjectType*>& types,
                  const std::function<void(const std::vector<Shown>&)>& emit);

// One object, `object.key` its type's main key, read as scan_objects shows it (TIME and
// its type's reads in one round trip to the server of its hash tag; on a quorum, from every
// member, each tagged as scan_objects tags them): `emit` gets it, or nothing when it does
// not exist. Throws what Topology::pipeline throws (on a quorum: UnavailableError when
// fewer than a majority answered).
void read_object(redis::Topology& topology, const prim::KeyLayout& layout, const ObjectType& type,
                 const Found& object, const std::function<void(const std::vector<Shown>&)>& emit);

}  // namespace rlock::inspect
