#pragma once

#include <string>
#include <vector>

namespace rlock::prim {

// A hold of one of the rlock processes a job runs under: `exec` and `sem exec` export
// theirs to the job (RLOCK_HOLDS), nearest last. The acquisition scripts check each against
// the server: a request that could only be granted once one of them is released would wait
// for itself, and is refused at once. Nothing is ever granted because of one.
struct AncestorHold {
  std::string id;     // the hold id: an exec's wait id, a sem exec's permit id prefix
  std::string owner;  // the owner it holds for (a shared exec hold is found by both)
};

// The scripts' argument: one "<id> <owner>" per line (owners have no control characters).
std::string ancestry_arg(const std::vector<AncestorHold>& holds);

// The hold `id` among `holds`, or nullptr.
const AncestorHold* find_ancestor(const std::vector<AncestorHold>& holds, const std::string& id);

}  // namespace rlock::prim
