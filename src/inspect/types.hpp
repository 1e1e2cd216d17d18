#pragma once

#include "inspect/object_type.hpp"

namespace rlock::inspect {

// The object types, one file each (inspect/<type>_type.cpp); listed in object_types().
const ObjectType& lock_type();   // rlock:lock:{NAME} and its queue
const ObjectType& latch_type();  // rlock:latch:{NAME} and its ids

}  // namespace rlock::inspect
