#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "prim/ancestry.hpp"

namespace rlock::cli {

// The variable in which `exec` and `sem exec` tell their job which holds it runs under.
inline constexpr const char* kHoldsVariable = "RLOCK_HOLDS";

// At most this many holds are passed on (the nearest ones): deeper nestings are not checked.
inline constexpr size_t kMaxAncestors = 16;

// The holds an RLOCK_HOLDS value names: space-separated "<hold id>:<owner>" entries, the
// owner with '%' and ' ' written %25 and %20. Entries that are not well formed (not 16
// lowercase hex digits, an owner rlock would refuse) are left out: the value is only a
// hint that the server checks, never a right.
std::vector<prim::AncestorHold> parse_holds(std::string_view value);

// The RLOCK_HOLDS value for a job run under `own`: `inherited` and then `own`, the nearest
// kMaxAncestors of them.
std::string holds_for_job(std::vector<prim::AncestorHold> inherited, prim::AncestorHold own);
// The same for a job run under several holds of its own (exec of several locks), `own`
// last.
std::string holds_for_job_several(std::vector<prim::AncestorHold> inherited,
                                  const std::vector<prim::AncestorHold>& own);

// The holds this process runs under (its RLOCK_HOLDS; empty when unset).
std::vector<prim::AncestorHold> inherited_holds();

}  // namespace rlock::cli
