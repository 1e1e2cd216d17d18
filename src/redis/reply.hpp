#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>

namespace rlock::redis {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
// Owns one hiredis reply; no raw redisReply* escapes the redis layer's callers.
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// Accessors that throw DataError when the reply has another shape than expected.
long long as_integer(const redisReply* r);
std::string as_string(const redisReply* r);  // bulk or status string; nil -> ""
bool is_nil(const redisReply* r);
const redisReply* element(const redisReply* r, size_t i);  // array element i

}  // namespace rlock::redis
