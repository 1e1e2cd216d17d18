#pragma once

#include <memory>

#include "inspect/object_type.hpp"

namespace rlock::inspect {

// The object types, one file each (inspect/<type>_type.cpp); listed in object_types().
const ObjectType& lock_type();   // rlock:lock:{NAME} and its queue
const ObjectType& latch_type();  // rlock:latch:{NAME} and its ids
const ObjectType& sem_type();    // rlock:sem:{NAME} (permits in use) and its queue
const ObjectType& queue_type();  // rlock:queue:{NAME}: a delayed queue holding items

// rlock:runs:{NAME}: exec --once-per's run history, showing the newest kDefaultHistory runs;
// make_runs_type shows the newest `history` (1 to prim::RunHistory::kKept) instead.
const ObjectType& runs_type();
inline constexpr int kDefaultHistory = 10;
std::unique_ptr<ObjectType> make_runs_type(int history);

// rlock:limit:{NAME} (config, overall TAT) and its client buckets.
const ObjectType& limiter_type();

}  // namespace rlock::inspect
