// How the members' replies to one request are read and counted on a quorum: which member
// said yes, which count (the restart rule), and the tally a majority is decided on.
#pragma once

#include <hiredis/hiredis.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/reply.hpp"

namespace rlock::redis {

class QuorumRule;

// Each member's replies to one write (the member check first, when there is one), or none
// when it has not answered.
using Answers = std::vector<std::optional<std::vector<ReplyPtr>>>;

inline bool is_error(const redisReply* r) { return r && r->type == REDIS_REPLY_ERROR; }

// The code word of an error reply (NOPERM, NOSCRIPT, ...).
inline std::string_view first_word(const redisReply* r) {
  std::string_view text(r->str, r->len);
  return text.substr(0, text.find(' '));
}

// Element i of an array reply as an integer (0 when it is not one).
inline long long int_at(const redisReply* r, size_t i) {
  if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements) return 0;
  return r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : 0;
}

// What one member said about the request, once the member check is read.
struct Answer {
  const redisReply* main = nullptr;  // the script's reply; null: no answer
  bool counts = false;               // answered, and its data is not younger than a lease
  bool yes = false;                  // granted, renewed, released (see QuorumRule)
  long long longest_lease = 0;       // quorum_member.lua's, 0 without the check
  bool check_refused = false;        // `main` is the check's ACL refusal
  bool request_refused = false;      // the request's own script was refused by the ACL too
};

// Whether a member's reply says yes by the rule (QuorumRule::votes_yes); an error never does.
bool votes_yes(const QuorumRule& rule, const redisReply* r);

// Reads the members' answers (`checked`: with the member check in front of each request).
std::vector<Answer> read_answers(const QuorumRule& rule, const Answers& replies, bool checked);

// The count a majority is decided on.
struct Tally {
  size_t answered = 0, counting = 0, yes = 0, yes_counting = 0, errors_counting = 0;
  const redisReply* error = nullptr;
  bool error_in_check = false;
  bool request_refused = false;  // of the member whose answer is `error`
};
Tally tally(const std::vector<Answer>& answers);

// The error that decides (`t.error`, which must be set), as rlock reports it.
std::string error_line(const Tally& t);

}  // namespace rlock::redis
