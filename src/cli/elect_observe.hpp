#pragma once

#include <string>

#include "cli/console.hpp"
#include "prim/key_layout.hpp"
#include "redis/topology.hpp"

namespace rlock::cli {

// Prints {"name", "leader": {"owner", "note", "fence", "since"} or null} once, then a line
// per change of the lock's exclusive holder, until INT, TERM, HUP or QUIT (then returns
// 0); reconnects across failovers and outages as a waiter does. Throws what the first
// read throws (Redis unreachable at the start: exit 69).
int run_elect_observe(const std::string& name, redis::Topology& topology,
                      const prim::KeyLayout& layout, const Console& console);

}  // namespace rlock::cli
