#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inspect/object_type.hpp"

namespace rlock::inspect {

// inspect's view of Redisson's RPermitExpirableSemaphore under --layout redisson (`--type
// sem`): found by its {NAME}:timeout zset (RedissonLayout::sem_key_pattern), which exists while a
// permit is taken (as an rlock semaphore is listed only while one of its permits is in use),
// whichever client, Java or rlock, took them. The same JSON shape as an rlock semaphore's; owners
// and notes are null (Redisson keeps none) and a permit without expiry has lease_ms -1.
namespace redisson_sem {
// Whether o.key is the {NAME}:timeout zset (RedissonLayout::sem_key_pattern, sem_name).
bool is_key(const Found& o);
std::vector<std::vector<std::string>> reads(const Found& o);  // two, as SemType's
std::optional<Decoded> decode(const Found& o, const redis::Reply* r, const BatchClock& clock);
}  // namespace redisson_sem

}  // namespace rlock::inspect
