// The quorum's vote tally, on replies as a server sends them (RESP parsed by hiredis's
// reader): which member counts, which said yes, and what the tally holds.
#include "redis/quorum_vote.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <string>
#include <string_view>

#include "prim/lock_quorum.hpp"
#include "redis/quorum_rule.hpp"

namespace rlock::redis {
namespace {

ReplyPtr parse(std::string_view resp) {
  redisReader* reader = redisReaderCreate();
  REQUIRE(redisReaderFeed(reader, resp.data(), resp.size()) == REDIS_OK);
  void* out = nullptr;
  const int rc = redisReaderGetReply(reader, &out);
  redisReaderFree(reader);
  REQUIRE(rc == REDIS_OK);
  REQUIRE(out != nullptr);
  return ReplyPtr(static_cast<redisReply*>(out));
}

// A member check's reply: {uptime, first write, longest lease, now} (lua/quorum_member.lua).
std::string check(long long uptime, long long first_write, long long longest, long long now) {
  return "*4\r\n:" + std::to_string(uptime) + "\r\n:" + std::to_string(first_write) +
         "\r\n:" + std::to_string(longest) + "\r\n:" + std::to_string(now) + "\r\n";
}

constexpr std::string_view kGranted = "*5\r\n:1\r\n:1\r\n:77\r\n:30000\r\n:1\r\n";
constexpr std::string_view kBusy = "*7\r\n:0\r\n:25000\r\n:0\r\n:0\r\n:1\r\n:76\r\n:0\r\n";

// One member's answer: its check (when `with_check` is not empty) and the request's reply.
std::optional<std::vector<ReplyPtr>> answer(std::string_view main,
                                            std::string_view with_check = "") {
  std::vector<ReplyPtr> replies;
  if (!with_check.empty()) replies.push_back(parse(with_check));
  replies.push_back(parse(main));
  return replies;
}

// The lock's rules, as a Lock registers them.
const QuorumRule& rule(const char* name) {
  prim::use_lock_quorum_rules();
  const QuorumRule* r = find_quorum_rule(name);
  REQUIRE(r != nullptr);
  return *r;
}

constexpr long long kNow = 1'800'000'000'000;  // a server's clock, ms

TEST_CASE("tally: grants, a busy member and one that did not answer") {
  Answers replies;
  replies.push_back(answer(kGranted));
  replies.push_back(answer(kBusy));
  replies.push_back(std::nullopt);
  replies.push_back(answer(kGranted));
  const auto answers = read_answers(rule("grant"), replies, false);
  CHECK(answers[0].yes);
  CHECK_FALSE(answers[1].yes);
  CHECK(answers[2].main == nullptr);
  const Tally t = tally(answers);
  CHECK(t.answered == 3);
  CHECK(t.counting == 3);
  CHECK(t.yes == 2);
  CHECK(t.yes_counting == 2);
  CHECK(t.error == nullptr);
}

TEST_CASE("tally: a grant from a member restarted empty is a yes that does not count") {
  const long long first_use = kNow - 600'000;
  Answers replies;
  replies.push_back(answer(kGranted, check(900'000, first_use, 30'000, kNow)));
  replies.push_back(answer(kGranted, check(5'000, kNow, 0, kNow)));  // restarted, lost it all
  replies.push_back(answer(kBusy, check(900'000, first_use + 10, 30'000, kNow)));
  const auto answers = read_answers(rule("grant"), replies, true);
  CHECK(answers[0].counts);
  CHECK_FALSE(answers[1].counts);  // the others remember a 30 s lease
  CHECK(answers[2].counts);
  const Tally t = tally(answers);
  CHECK(t.yes == 2);
  CHECK(t.yes_counting == 1);
  CHECK(t.counting == 2);
}

TEST_CASE("tally: renewals say yes with time left; errors are counted and named") {
  Answers replies;
  replies.push_back(answer(":29000\r\n"));
  replies.push_back(answer(":0\r\n"));
  replies.push_back(answer("-BADTYPE list rlock:lock:{x}\r\n"));
  const auto answers = read_answers(rule("renew"), replies, false);
  CHECK(answers[0].yes);
  CHECK_FALSE(answers[1].yes);
  CHECK_FALSE(answers[2].yes);
  const Tally t = tally(answers);
  CHECK(t.yes == 1);
  CHECK(t.errors_counting == 1);
  REQUIRE(t.error != nullptr);
  CHECK(error_line(t) == "BADTYPE list rlock:lock:{x}");
}

TEST_CASE("tally: an ACL refusal of the member check is that member's answer, named") {
  Answers replies;
  replies.push_back(
      answer(kGranted, "-NOPERM No permissions to access a key\r\n"));  // Redis 8 wording
  replies.push_back(answer(kGranted, check(900'000, kNow - 600'000, 30'000, kNow)));
  const auto answers = read_answers(rule("grant"), replies, true);
  CHECK(answers[0].check_refused);
  CHECK_FALSE(answers[0].yes);
  CHECK(answers[0].counts);  // a grant refused there holds nothing there
  const Tally t = tally(answers);
  REQUIRE(t.error != nullptr);
  CHECK(error_line(t) ==
        "NOPERM No permissions to access a key (the quorum's own keys rlock:quorum:*, the same "
        "whatever --prefix)");
  // A renewal's own script ran beside the refused check: that member may still hold.
  Answers renewals;
  renewals.push_back(answer(":29000\r\n", "-NOPERM No permissions to access a key\r\n"));
  CHECK_FALSE(read_answers(rule("renew"), renewals, true)[0].counts);
}

}  // namespace
}  // namespace rlock::redis
