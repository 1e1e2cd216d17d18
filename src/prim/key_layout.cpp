#include "prim/key_layout.hpp"

namespace rlock::prim {
namespace {

// The prefix is literal text inside a glob: escape what SCAN MATCH would interpret.
std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string KeyLayout::lock_key(std::string_view name) const {
  return prefix_ + "lock:{" + std::string(name) + "}";
}

std::string KeyLayout::fence_key(std::string_view name) const { return lock_key(name) + ":fence"; }

std::string KeyLayout::lock_channel(std::string_view name) const {
  return prefix_ + "chan:{" + std::string(name) + "}:lock";
}

std::string KeyLayout::waiters_key(std::string_view name) const { return lock_key(name) + ":waiters"; }

std::string KeyLayout::grant_channel(std::string_view name, std::string_view wait_id) const {
  return lock_channel(name) + ":" + std::string(wait_id);
}

std::string KeyLayout::lock_key_pattern(std::string_view name_glob) const {
  return glob_escape(prefix_) + "lock:{" + std::string(name_glob) + "}";
}

std::optional<std::string> KeyLayout::lock_name(std::string_view key) const {
  std::string head = prefix_ + "lock:{";
  if (key.size() <= head.size() || key.substr(0, head.size()) != head || key.back() != '}') {
    return std::nullopt;
  }
  return std::string(key.substr(head.size(), key.size() - head.size() - 1));
}

}  // namespace rlock::prim
