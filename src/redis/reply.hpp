#pragma once

#include <memory>
#include <string>

struct redisReply;  // hiredis: never named outside src/redis

namespace rlock::redis {

// A read-only look at one reply, or one element of it. The accessors throw DataError when
// the reply has another shape than expected (a server's reply is data, not an order).
class ReplyView {
 public:
  explicit ReplyView(const ::redisReply* r) : r_(r) {}

  bool is_error() const;
  bool is_nil() const;
  bool is_integer() const;
  bool is_string() const;  // bulk or status string
  bool is_array() const;
  long long integer() const;     // an integer reply, or a string holding one
  std::string str() const;       // bulk, status or error text; nil -> ""; integer -> decimal
  size_t size() const;           // elements of an array; 0 for anything else
  ReplyView at(size_t i) const;  // element i of an array

 private:
  const ::redisReply* r_;
};

struct ReplyDeleter {
  void operator()(::redisReply* r) const;
};
// Owns one hiredis reply inside the redis layer.
using ReplyPtr = std::unique_ptr<::redisReply, ReplyDeleter>;

// Owns one reply (move-only): what the redis layer hands to everybody else.
class Reply : public ReplyView {
 public:
  explicit Reply(ReplyPtr r) : ReplyView(r.get()), owned_(std::move(r)) {}

 private:
  ReplyPtr owned_;
};

// Shorthands of the redis layer itself.
long long as_integer(const ::redisReply* r);
std::string as_string(const ::redisReply* r);  // bulk or status string; nil -> ""
bool is_nil(const ::redisReply* r);
const ::redisReply* element(const ::redisReply* r, size_t i);  // array element i

}  // namespace rlock::redis
