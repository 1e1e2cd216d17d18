#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "prim/redisson_layout.hpp"

namespace rlock::prim {

// `--layout redisson --redisson-object semaphore`: a semaphore is Redisson's RSemaphore, a
// bare integer string under its name (prim/redisson_rsemaphore.cpp). For `inspect --type
// sem`, every string key that is no key of rlock's or Redisson's own is a candidate (as for
// RCountDownLatch); inspect shows those holding a whole number.
class RedissonRSemLayout : public RedissonLayout {
 public:
  using RedissonLayout::RedissonLayout;
  std::string sem_key_pattern(std::string_view name_glob) const override {
    return lock_key_pattern(name_glob);
  }
  std::optional<std::string> sem_name(std::string_view key) const override {
    return lock_name(key);
  }
  std::string scan_type_of(std::string_view object_type) const override {
    return object_type == "sem" ? "string" : RedissonLayout::scan_type_of(object_type);
  }
};

}  // namespace rlock::prim
