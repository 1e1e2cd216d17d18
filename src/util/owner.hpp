#pragma once

#include <string>

namespace rlock {

// A fresh owner id `host:pid:random` (8 hex digits of randomness), unique across hosts
// and across pid reuse.
std::string default_owner();

// `bytes` random bytes as lowercase hex (ids that must not collide across processes).
std::string random_hex(size_t bytes);

}  // namespace rlock
