#include "prim/redisson_layout.hpp"

#include <cstdint>
#include <cstdio>

#include "util/error.hpp"

namespace rlock::prim {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in lower case, as java.util.UUID prints it.
bool is_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

bool is_thread_id(std::string_view s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// 64-bit FNV-1a from `seed`: two of them give the 128 bits of a UUID. Not a secret: the
// field only has to be stable and unlikely to meet another owner's.
uint64_t fnv1a(std::string_view s, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string redisson_owner_field(std::string_view owner) {
  size_t colon = owner.rfind(':');
  if (colon != std::string_view::npos && is_uuid(owner.substr(0, colon)) &&
      is_thread_id(owner.substr(colon + 1))) {
    return std::string(owner);
  }
  uint64_t hi = fnv1a(owner, 0xcbf29ce484222325ULL);
  uint64_t lo = fnv1a(owner, 0x84222325cbf29ce4ULL);
  // Version 8 (RFC 9562: vendor-specific) and the RFC variant bits.
  hi = (hi & ~0xf000ULL) | 0x8000ULL;
  lo = (lo & ~(3ULL << 62)) | (2ULL << 62);
  char out[48];
  std::snprintf(out, sizeof out, "%08llx-%04llx-%04llx-%04llx-%012llx:1",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return out;
}

RedissonLayout::RedissonLayout(std::string prefix) : KeyLayout(std::move(prefix)) {}

void RedissonLayout::check_name(std::string_view name) const {
  if (name.find_first_of("{}") != std::string_view::npos) {
    throw UsageError("--layout redisson: name '" + std::string(name) +
                     "' contains a brace; Redisson's clients disagree on its channel and "
                     "cluster slot, so names with braces are refused");
  }
}

std::string RedissonLayout::own_key(std::string_view name, std::string_view what) const {
  std::string key = prefix() + "redisson:{";
  key.append(name).append("}:").append(what);
  return key;
}

std::string RedissonLayout::lock_key(std::string_view name) const { return std::string(name); }
std::string RedissonLayout::fence_key(std::string_view name) const {
  return own_key(name, "fence");
}
std::string RedissonLayout::waiters_key(std::string_view name) const {
  return own_key(name, "waiters");
}
std::string RedissonLayout::timeouts_key(std::string_view name) const {
  return own_key(name, "timeouts");
}
std::string RedissonLayout::grant_key(std::string_view name) const {
  return own_key(name, "grant");
}
std::string RedissonLayout::policy_key(std::string_view name) const {
  return own_key(name, "policy");
}
std::string RedissonLayout::superseded_key(std::string_view name) const {
  return own_key(name, "superseded");
}
std::string RedissonLayout::exec_key(std::string_view name) const { return own_key(name, "exec"); }
std::string RedissonLayout::readers_key(std::string_view name) const {
  return own_key(name, "readers");
}
std::string RedissonLayout::reader_grants_key(std::string_view name) const {
  return own_key(name, "rgrants");
}
std::string RedissonLayout::reader_expiries_key(std::string_view name) const {
  return own_key(name, "rexp");
}
std::string RedissonLayout::notes_key(std::string_view name) const {
  return own_key(name, "notes");
}
std::string RedissonLayout::request_key(std::string_view name, std::string_view id) const {
  return own_key(name, "req:" + std::string(id));
}
std::string RedissonLayout::reply_key(std::string_view name, std::string_view id) const {
  return own_key(name, "reply:" + std::string(id));
}
std::string RedissonLayout::lock_channel(std::string_view name) const {
  return own_key(name, "chan");
}
std::string RedissonLayout::sem_key(std::string_view name) const { return own_key(name, "sem"); }
std::string RedissonLayout::latch_key(std::string_view name) const { return std::string(name); }
std::string RedissonLayout::latch_ids_key(std::string_view name) const {
  return own_key(name, "latch_ids");
}
std::string RedissonLayout::latch_channel(std::string_view name) const {
  std::string channel = "redisson_countdownlatch__channel__{";
  channel.append(name).push_back('}');
  return channel;
}
std::string RedissonLayout::latch_key_pattern(std::string_view name_glob) const {
  return std::string(name_glob);
}
// A latch is a bare integer, as an RSemaphore or an RAtomicLong is: any string key that
// is no key of rlock's or of Redisson's own.
std::optional<std::string> RedissonLayout::latch_name(std::string_view key) const {
  return lock_name(key);
}
std::string RedissonLayout::sem_key_pattern(std::string_view name_glob) const {
  return "{" + std::string(name_glob) + "}:timeout";
}
std::optional<std::string> RedissonLayout::sem_name(std::string_view key) const {
  constexpr std::string_view kSuffix = "}:timeout";
  if (key.size() <= kSuffix.size() + 1 || key.front() != '{' || !key.ends_with(kSuffix))
    return std::nullopt;
  std::string name(key.substr(1, key.size() - 1 - kSuffix.size()));
  // A name with braces of its own is refused under the layout (check_name).
  if (name.find_first_of("{}") != std::string::npos) return std::nullopt;
  return name;
}
std::string RedissonLayout::scan_type_of(std::string_view object_type) const {
  if (object_type == "sem") return "zset";
  return object_type == "latch" ? "string" : scan_type();
}
std::string RedissonLayout::foreign_lock_channel(std::string_view name) const {
  std::string channel = "redisson_lock__channel:{";
  channel.append(name).push_back('}');
  return channel;
}
std::string RedissonLayout::owner_field(std::string_view owner) const {
  return redisson_owner_field(owner);
}

std::string RedissonLayout::lock_key_pattern(std::string_view name_glob) const {
  return std::string(name_glob);
}
// rlock's own keys and Redisson's auxiliary ones (fair-lock queues, unlock latches, ...)
// are no lock names; a brace marks another layout's key.
std::optional<std::string> RedissonLayout::lock_name(std::string_view key) const {
  if (key.empty() || key.find_first_of("{}") != std::string_view::npos) return std::nullopt;
  if (!prefix().empty() && key.substr(0, prefix().size()) == prefix()) return std::nullopt;
  if (key.substr(0, 9) == "redisson_") return std::nullopt;
  return std::string(key);
}
std::optional<std::string> RedissonLayout::readers_name(std::string_view) const {
  return std::nullopt;
}
std::string RedissonLayout::limiter_key_pattern(std::string_view name_glob) const {
  return lock_key_pattern(name_glob);
}
std::optional<std::string> RedissonLayout::limiter_name(std::string_view key) const {
  return lock_name(key);
}
std::string RedissonLayout::any_key_pattern(std::string_view name_glob) const {
  return lock_key_pattern(name_glob);
}

}  // namespace rlock::prim
