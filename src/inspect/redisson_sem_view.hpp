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
// Under --redisson-object semaphore, Redisson's RSemaphore instead: a bare integer string
// under its name (prim::RedissonRSemLayout), shown with its "free" count; what Redisson
// does not keep (the total, the permits taken, the waiters) is null.
namespace redisson_sem {
// Whether o.key is the {NAME}:timeout zset (RedissonLayout::sem_key_pattern, sem_name) or an
// RSemaphore's bare name (RedissonRSemLayout).
bool is_key(const Found& o);
std::vector<std::vector<std::string>> reads(const Found& o);  // two, as SemType's
std::optional<Decoded> decode(const Found& o, const redis::Reply* r, const BatchClock& clock);
}  // namespace redisson_sem

}  // namespace rlock::inspect
