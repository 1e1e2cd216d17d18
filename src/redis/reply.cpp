#include "redis/reply.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

#include "redis/errors.hpp"

namespace rlock::redis {
namespace {

// Replies that say the stored data is not what rlock expects.
const char* kData[] = {"WRONGTYPE", "BADTYPE", "MALFORMED", "UPGRADE", "SELF"};
// Replies that say this server cannot serve rlock now or here, also when a command inside
// one of rlock's scripts gets them (a write on a read-only replica, a full memory, ...).
const char* kUnavailable[] = {"READONLY", "OOM",        "MISCONF",     "LOADING",
                              "BUSY",     "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN",
                              "MOVED",    "ASK",        "CROSSSLOT",   "NOREPLICAS"};

std::string first_word(const std::string& s) { return s.substr(0, s.find(' ')); }

bool one_of(const std::string& code, const auto& list) {
  for (const char* c : list) {
    if (code == c) return true;
  }
  return false;
}

int exit_code_for(const std::string& message) {
  std::string code = first_word(message);
  if (code == "NOPERM") return kExitNoPerm;
  if (one_of(code, kData)) return kExitData;
  if (one_of(code, kUnavailable)) return kExitUnavailable;
  // A runtime error inside one of rlock's own scripts is a bug in rlock.
  if (message.find("user_script:") != std::string::npos ||
      message.find("Error running script") != std::string::npos) {
    return kExitInternal;
  }
  // NOAUTH, WRONGPASS, LOADING, BUSY, MASTERDOWN, READONLY, OOM, MISCONF, CLUSTERDOWN,
  // TRYAGAIN, MOVED, ASK, CROSSSLOT, "ERR max number of clients reached", and whatever else a
  // server answers: it cannot serve rlock now or here.
  return kExitUnavailable;
}

// A server with a password answers NOAUTH, or (for commands of more than 10 arguments
// before AUTH) closes with a protocol error about an unauthenticated client.
bool needs_password(const std::string& message) {
  return first_word(message) == "NOAUTH" || message.find("unauthenticated") != std::string::npos;
}

std::string hint(const std::string& message) {
  if (needs_password(message))
    return " (the server needs a password: RLOCK_PASSWORD or --password-file)";
  if (first_word(message) == "NOPERM")
    return " (the ACL user lacks a right rlock needs; see ACL in rlock(1))";
  if (first_word(message) == "READONLY")
    return " (this is a replica: point --url at the primary, or at Sentinel's current one)";
  return "";
}

}  // namespace

ReplyError::ReplyError(const std::string& message)
    : Error(needs_password(message) ? kExitUnavailable : exit_code_for(message),
            "redis: " + message + hint(message)),
      code_(first_word(message)),
      reply_(message) {}

long long as_integer(const redisReply* r) {
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
    long long v = 0;
    auto [end, ec] = std::from_chars(r->str, r->str + r->len, v);
    if (ec == std::errc() && end == r->str + r->len) return v;
  }
  throw DataError("unexpected reply from redis: expected an integer");
}

std::string as_string(const redisReply* r) {
  if (r->type == REDIS_REPLY_NIL) return {};
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
    return std::string(r->str, r->len);
  }
  if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
  throw DataError("unexpected reply from redis: expected a string");
}

bool is_nil(const redisReply* r) { return r->type == REDIS_REPLY_NIL; }

const redisReply* element(const redisReply* r, size_t i) {
  if (r->type != REDIS_REPLY_ARRAY || i >= r->elements) {
    throw DataError("unexpected reply from redis: expected an array of more than " +
                    std::to_string(i) + " elements");
  }
  return r->element[i];
}

void ReplyDeleter::operator()(redisReply* r) const { freeReplyObject(r); }

bool ReplyView::is_error() const { return r_->type == REDIS_REPLY_ERROR; }
bool ReplyView::is_nil() const { return r_->type == REDIS_REPLY_NIL; }
bool ReplyView::is_integer() const { return r_->type == REDIS_REPLY_INTEGER; }
bool ReplyView::is_string() const {
  return r_->type == REDIS_REPLY_STRING || r_->type == REDIS_REPLY_STATUS;
}
bool ReplyView::is_array() const { return r_->type == REDIS_REPLY_ARRAY; }
long long ReplyView::integer() const { return as_integer(r_); }

std::string ReplyView::str() const {
  if (is_error()) return std::string(r_->str, r_->len);
  return as_string(r_);
}

size_t ReplyView::size() const { return is_array() ? r_->elements : 0; }
ReplyView ReplyView::at(size_t i) const { return ReplyView(element(r_, i)); }

}  // namespace rlock::redis
