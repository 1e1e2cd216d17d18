#pragma once

#include <string>
#include <vector>

#include "inspect/lock_view.hpp"

namespace rlock::inspect {

// Aligned columns TYPE NAME HOLDERS TTL FENCE WAITERS, one row per lock, for people.
std::string render_table(const std::vector<LockView>& views);

}  // namespace rlock::inspect
