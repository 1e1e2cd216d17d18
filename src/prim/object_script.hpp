#pragma once

#include <string_view>
#include <vector>

#include "redis/script.hpp"
#include "redis/topology.hpp"

namespace rlock::prim {

// Runs a primitive's script and turns its "BADTYPE <type> <key>" / "MALFORMED <key>"
// error replies into DataError (exit 65) naming the key and `object_kind` ("lock", ...).
redis::Reply run_object_script(redis::Topology& topology, const redis::Script& script,
                               const std::vector<std::string_view>& keys,
                               const std::vector<std::string_view>& args,
                               std::string_view object_kind,
                               redis::Retry retry = redis::Retry::kNever);

}  // namespace rlock::prim
