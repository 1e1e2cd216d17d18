#include "redis/quorum_vote.hpp"

#include <algorithm>

#include "redis/quorum_restart_rule.hpp"
#include "redis/quorum_rule.hpp"

namespace rlock::redis {

bool votes_yes(const QuorumRule& rule, const redisReply* r) {
  return r && !is_error(r) && rule.votes_yes(r);
}

// Reads the members' answers. With a member check in front (`checked`), a member does not
// count while its uptime is shorter than the longest lease any member was asked for before
// (every grant raised that figure on the members it asked, so the others remember a lease
// that a member lost with its data) if its data set began in this run of the server and
// after the quorum's first use: it restarted empty, and may have granted a hold it no
// longer knows. Where no member remembers a lease, nothing was ever granted.
std::vector<Answer> read_answers(const QuorumRule& rule, const Answers& replies, bool checked) {
  std::vector<Answer> out(replies.size());
  long long longest = 0, first_use = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i]) continue;
    out[i].main = replies[i]->back().get();
    if (!checked) continue;
    const redisReply* c = replies[i]->front().get();
    longest = std::max(longest, int_at(c, 2));
    long long first_write = int_at(c, 1);
    if (first_write > 0) first_use = first_use ? std::min(first_use, first_write) : first_write;
  }
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!out[i].main) continue;
    out[i].counts = true;
    if (checked) {
      const redisReply* c = replies[i]->front().get();
      // An ACL refusal of the check is the member's answer: a user without the rights the
      // quorum's keys need is a configuration to fix (exit 77), not a young member.
      if (is_error(c) && first_word(c) == "NOPERM") {
        out[i].request_refused = is_error(out[i].main) && first_word(out[i].main) == "NOPERM";
        out[i].main = c;
        out[i].check_refused = true;
        // Its own script may have run beside the refused check (a renewal): then that member
        // does not count, as it may still hold (QuorumRule::refused_check_counts).
        out[i].counts = rule.refused_check_counts();
        continue;
      }
      MemberAge age{int_at(c, 0), int_at(c, 1), int_at(c, 2), int_at(c, 3)};
      if (is_error(c) || not_counted_for(age, longest, first_use).count() > 0)
        out[i].counts = false;
    }
    out[i].yes = votes_yes(rule, out[i].main);
  }
  return out;
}

Tally tally(const std::vector<Answer>& answers) {
  Tally t;
  for (const Answer& a : answers) {
    if (!a.main) continue;
    ++t.answered;
    if (a.counts) ++t.counting;
    if (a.yes) ++t.yes;
    if (a.yes && a.counts) ++t.yes_counting;
    if (is_error(a.main) && !t.error) {
      t.error = a.main;
      t.error_in_check = a.check_refused;
      t.request_refused = a.request_refused;
    }
    if (is_error(a.main) && a.counts) ++t.errors_counting;
  }
  return t;
}

// The error that decides, as rlock reports it. Redis refuses a script whose declared keys
// the ACL user may not touch before it runs: from the member check, those are the restart
// rule's keys, which no --prefix moves.
std::string error_line(const Tally& t) {
  std::string line(t.error->str, t.error->len);
  if (t.error_in_check) line += member_check_refusal_note(line, t.request_refused);
  return line;
}

}  // namespace rlock::redis
