#include "prim/lock_quorum.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "redis/errors.hpp"
#include "redis/quorum_rule.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::prim {
namespace {

using redis::Answer;
using redis::Answers;
using redis::int_at;
using redis::is_error;
using redis::QuorumVote;
using redis::Reply;
using redis::ReplyError;
using redis::ReplyPtr;
using redis::Tally;

// Where the rules find what they need in a lock script's KEYS and ARGV: the positions its
// header declares (redis::contract, generated from lua/lock_*.lua), counted from 1 as the
// QuorumRule interface counts them. The token is element 2 of a grant's reply.
using Acquire = redis::contract::lock_acquire;
using Renew = redis::contract::lock_renew;
using Release = redis::contract::lock_release;
using ForceRelease = redis::contract::lock_force_release;
using FenceRaise = redis::contract::lock_fence_raise;
constexpr int kAcquireLeaseArg = Acquire::kArgLease + 1;
constexpr int kRenewLeaseArg = Renew::kArgLease + 1;
constexpr size_t kFenceAt = 2;
constexpr int kAcquireFloorArg = Acquire::kArgFloor + 1;
constexpr int kReleaseFloorArg = Release::kArgFloor + 1;
constexpr int kForceReleaseFloorArg = ForceRelease::kArgFloor + 1;
// The three scripts that may hand the lock on share one rule, so their floor is one place.
static_assert(redis::contract::lock_abandon::kArgFloor == Release::kArgFloor);
static_assert(redis::contract::lock_return::kArgFloor == Release::kArgFloor);

// How long the end of a process waits for the replies of a release still owed by members
// that had not answered when a majority did (QuorumMembers::drain): one that a member never
// ran leaves it holding (a minority) until its lease ends, and Redis drops the commands of
// a client that disconnects while CLIENT PAUSE holds them (a failover pauses writes), so
// releases wait longer than renewals and a token's write-back (redis::kDrainPatience),
// which lose nothing that matters in a minority.
constexpr Millis kReleasePatience{500};

// How long a grant that the answering members split waits for the others at least.
constexpr Millis kSplitPatience{50};

// How far ahead of this client's clock the token floor a quorum proposes is (fence_floor):
// a member whose clock is up to that much ahead still hands out the floor, not a token of
// its own clock, and the members agree.
constexpr std::chrono::microseconds kFloorAhead{std::chrono::seconds(1)};

std::string fence_floor() {
  // The floor only needs to be the same on every member and usually above each member's
  // counter (each counter is at least its server's clock in microseconds at its last grant,
  // lua/include/lock_common.lua). Correctness never rests on it: members that disagree get
  // the largest token written back (write_back_fence).
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::to_string(
      (std::chrono::duration_cast<std::chrono::microseconds>(now) + kFloorAhead).count());
}

Millis since(Deadline start) {
  return std::chrono::duration_cast<Millis>(SteadyClock::now() - start);
}

// The time left that a member's reply reports (`reported`, ms), counted from the request's
// first send to it instead of from its run. A reply to a repeat (`repeated_after` > 0)
// reports what was left when the repeat ran, and the hold was made by the first try, which
// ran somewhere between the first send and the repeat: counted from the first send, at
// least `reported` + `repeated_after` is left. That can be more than the lease asked for
// (a first try that a stalled member ran late), which no one granted in so many words: the
// figure is at most `lease`, unless the member itself reports more (a re-entry keeps a
// longer lease in force).
long long left_since_first_send(long long reported, Millis repeated_after, long long lease) {
  if (repeated_after.count() == 0) return reported;
  return std::min(reported + repeated_after.count(), std::max(reported, lease));
}

// `figure` of each member whose answer counts and says yes, as left at the first send,
// longest first.
std::vector<long long> left_of_yes(const QuorumVote& v, long long (*figure)(const redisReply*)) {
  std::vector<long long> left;
  for (size_t i = 0; i < v.size; ++i) {
    if (v.counted_yes(i))
      left.push_back(
          left_since_first_send(figure(v.answers[i].main), v.repeated_after[i], v.lease));
  }
  std::sort(left.rbegin(), left.rend());
  return left;
}

// Decided once a majority said yes, or so many said no that none can.
std::optional<Deadline> majority_said(size_t yes, size_t no, size_t n, size_t need) {
  if (yes >= need || no > n - need) return SteadyClock::now();
  return std::nullopt;
}

// The rules of the lock scripts that hand out a token: the same floor proposed to every
// member (see use_lock_quorum_rules).
class Proposing : public redis::QuorumRule {
 public:
  explicit Proposing(int floor_arg) : floor_arg_(floor_arg) {}
  std::vector<std::string_view> for_every_member(const std::vector<std::string_view>& args,
                                                 std::string& keep) const override {
    std::vector<std::string_view> out = args;
    keep = fence_floor();
    out.resize(std::max(out.size(), size_t(floor_arg_)));
    out[floor_arg_ - 1] = keep;
    return out;
  }

 private:
  int floor_arg_;
};

class GrantRule : public Proposing {
 public:
  GrantRule() : Proposing(kAcquireFloorArg) {}
  int lease_arg() const override { return kAcquireLeaseArg; }
  // A request to take a lock that a member answers late took nothing there.
  Millis settle() const override { return Millis(0); }
  bool gives_back() const override { return false; }
  // A grant refused there holds nothing there: that member's refusal counts.
  bool refused_check_counts() const override { return true; }
  bool votes_yes(const redisReply* r) const override {
    return r->type == REDIS_REPLY_ARRAY && int_at(r, 0) == 1;
  }
  std::optional<Deadline> decided(const Tally& t, size_t n, size_t need, Deadline start,
                                  std::optional<Deadline>& split_until) const override;
  Reply combine(QuorumVote& v) const override;

 private:
  Reply held(QuorumVote& v) const;
  Reply not_held(QuorumVote& v) const;
};

std::optional<Deadline> GrantRule::decided(const Tally& t, size_t n, size_t need, Deadline start,
                                           std::optional<Deadline>& split_until) const {
  // A member not counted yet (the restart rule) decides nothing: its answer neither makes a
  // majority nor rules one out, and ending on it would report a busy lock as fewer than a
  // majority answering (exit 69, a wait given up) while a member that counts had not
  // answered yet.
  const size_t yes = t.yes_counting, no = t.counting - t.yes_counting;
  // A refusal (busy on a majority) waits a while for the members that have not answered:
  // one that finds the lock free grants it to this request, and a grant nobody hears of
  // would stay there for the whole lease (a busy `lock -n` left one on a free member in
  // about a quarter of its runs). Answered, it is given back; unanswered, everything is
  // given back by the request's id (see combine).
  auto patience = [&] {
    if (!split_until) split_until = SteadyClock::now() + std::max(kSplitPatience, 2 * since(start));
    return split_until;
  };
  if (yes < need && no > n - need && t.answered < n) return patience();
  if (auto now = majority_said(yes, no, n, need)) return now;
  // A grant split between the members that answered: the others decide it, and are waited
  // for only a while (twice what the answers took, at least kSplitPatience), not the whole
  // --timeout a stopped member would take. Undecided, it is given back by its id on every
  // member (a later grant too), and a wait tries again.
  if (t.counting >= need) return patience();
  return std::nullopt;
}

// Raises the fencing token to `fence` on a majority of the members that count; throws
// UnavailableError naming the members that did not confirm it.
void write_back_fence(QuorumVote& v, long long fence, const std::vector<bool>& at_token) {
  // A member whose own counter gave the token holds it already (lock_fence_raise.lua would
  // change nothing there): it counts as written and is not asked. Each request a member
  // serves is a wake-up of its server (a PING's round trip took 80-95 us on the 2-core VM
  // of the benchmark), and a re-entry whose members agree needs no second round trip.
  const std::string token = std::to_string(fence);
  const std::vector<std::string_view> keys =
      redis::keys_of<FenceRaise>()
          .set(FenceRaise::kKeyFence, v.keys.at(Acquire::kKeyFence))
          .set(FenceRaise::kKeyLock, v.keys.at(Acquire::kKeyLock))
          .list();
  const std::vector<std::string_view> args =
      redis::args_of<FenceRaise>()
          .set(FenceRaise::kArgToken, token)
          .set(FenceRaise::kArgOwner, v.args.at(Acquire::kArgOwner))
          .list();
  std::vector<bool> to(v.size), wrote(v.size);
  for (size_t i = 0; i < v.size; ++i) to[i] = !at_token[i];
  auto raised = [&](const Answers& replies) {
    size_t ok = 0;
    for (size_t i = 0; i < v.size; ++i) {
      wrote[i] = v.answers[i].counts &&
                 (at_token[i] || (replies[i] && !is_error(replies[i]->front().get())));
      ok += wrote[i];
    }
    return ok;
  };
  // Its replies are read before the process exits (see QuorumMembers::drain): a write-back
  // still queued in a socket that is closed with a reply unread is reset away, and that
  // member keeps a later token of its own for this hold (a test saw a claim report it).
  if (raised(Answers(v.size)) >= v.majority) {
    // A majority has it already (a re-entry, as a rule): a member that answered with
    // another token gets it without being waited for here (a stopped member holds up no
    // re-entry), one that has not answered yet nothing.
    for (size_t i = 0; i < v.size; ++i) to[i] = to[i] && v.answers[i].main;
    v.io.write_only(redis::scripts::lock_fence_raise, keys, args, to, redis::kDrainPatience);
    return;
  }
  Answers replies = v.io.exchange(
      redis::scripts::lock_fence_raise, keys, args, to, v.until,
      [&](const Answers& r) { return raised(r) >= v.majority; }, redis::kDrainPatience);
  if (raised(replies) >= v.majority) return;
  for (size_t i = 0; i < replies.size(); ++i) {
    if (replies[i] && !wrote[i])
      v.io.note_failure(
          i, "answered " + std::string(replies[i]->front()->str, replies[i]->front()->len));
  }
  throw UnavailableError("the fencing token's write-back got no confirmed reply from a majority (" +
                         v.io.describe_missing(wrote) + ")");
}

Reply GrantRule::held(QuorumVote& v) const {
  // The lease in force is what a majority has at least (a re-entry keeps a longer one).
  const std::vector<long long> pttls =
      left_of_yes(v, [](const redisReply* r) { return int_at(r, 3); });
  const long long in_force = pttls.size() >= v.majority ? pttls[v.majority - 1] : 0;
  auto validity = [&] { return Millis(in_force) - since(v.start) - v.drift; };
  // A majority granted, but nothing is held: an outage, not a busy lock (nobody else holds
  // it). The caller gives back what was granted, by the request's id.
  auto too_late = [&](const std::string& what) {
    return redis::UnusableGrantError(
        "a majority" + v.of_n() + " granted the lock, but " + what + " after the lease ran out (" +
        format_duration(since(v.start)) + " after the request, lease " +
        format_duration(Millis(in_force)) + " less a drift allowance of " +
        format_duration(v.drift) + "); not held");
  };
  if (validity().count() <= 0) throw too_late("the members answered");
  long long fence = 0, count = 0, fresh = 0;
  for (const Answer& a : v.answers) {
    if (!a.yes) continue;
    fence = std::max(fence, int_at(a.main, kFenceAt));
    count = std::max(count, int_at(a.main, 1));
    fresh = std::max(fresh, int_at(a.main, 4));
  }
  std::vector<bool> at_token(v.size);
  for (size_t i = 0; i < v.size; ++i)
    at_token[i] = v.answers[i].yes && int_at(v.answers[i].main, kFenceAt) == fence;
  try {
    write_back_fence(v, fence, at_token);
  } catch (const UnavailableError& e) {
    throw redis::UnusableGrantError("a majority" + v.of_n() + " granted the lock, but " + e.what() +
                                    "; not held");
  }
  if (validity().count() <= 0) throw too_late("the fencing token's write-back answered");
  ReplyPtr r = v.take(v.first([](const Answer& a) { return a.yes && a.counts; }));
  r->element[1]->integer = count;
  r->element[kFenceAt]->integer = fence;
  r->element[3]->integer = in_force;
  r->element[4]->integer = fresh;
  return Reply(std::move(r));
}

Reply GrantRule::not_held(QuorumVote& v) const {
  const Tally& t = v.tally;
  const size_t n = v.size, need = v.majority;
  if (t.counting < need) throw v.unavailable("fewer than a majority" + v.of_n() + " answered");
  // An error from so many counting members that no majority can grant decides, even beside
  // grants: a request inside an exec that holds the lock is refused as waiting for itself
  // (SELF) by every member with the outer hold, and a member without it (down when the hold
  // was taken) grants. Retried, it would be split for ever. What was granted is given back
  // by the request's id (see prim::wait_for).
  if (t.error && (t.yes == 0 || t.errors_counting > n - need))
    throw ReplyError(redis::error_line(t));
  // A wait superseded on any member ({-3, owner}: a newer --supersede request queued there)
  // ends: its record there makes it take nothing on that member ever after.
  size_t superseded = v.first([](const Answer& a) {
    return !a.yes && a.main->type == REDIS_REPLY_ARRAY && a.main->elements == 2 &&
           int_at(a.main, 0) == -3;
  });
  if (superseded < n) return Reply(v.take(superseded));
  size_t busy = v.first([](const Answer& a) {
    return !a.yes && a.main->type == REDIS_REPLY_ARRAY && a.main->elements >= 7;
  });
  // Busy everywhere that answered, and everyone answered: nothing was taken.
  if (t.yes == 0 && busy < n && t.answered == n) return Reply(v.take(busy));
  size_t any = busy < n ? busy : v.first([](const Answer& a) { return a.yes; });
  if (any == n) throw v.unavailable("no majority" + v.of_n() + " answered the lock request");
  ReplyPtr r = v.take(any);
  r->element[0]->integer = -2;  // taken on some members only: given back by its id
  return Reply(std::move(r));
}

Reply GrantRule::combine(QuorumVote& v) const {
  return v.tally.yes_counting >= v.majority ? held(v) : not_held(v);
}

class RenewRule : public redis::QuorumRule {
 public:
  int lease_arg() const override { return kRenewLeaseArg; }
  Millis settle() const override { return redis::kDrainPatience; }
  bool gives_back() const override { return false; }
  // Its own script ran beside the refused check: that member may still hold.
  bool refused_check_counts() const override { return false; }
  bool votes_yes(const redisReply* r) const override {
    return r->type == REDIS_REPLY_INTEGER && r->integer > 0;
  }
  std::optional<Deadline> decided(const Tally& t, size_t n, size_t need, Deadline,
                                  std::optional<Deadline>&) const override {
    return majority_said(t.yes_counting, t.counting - t.yes_counting, n, need);
  }
  Reply combine(QuorumVote& v) const override {
    const size_t need = v.majority;
    const std::vector<long long> left =
        left_of_yes(v, [](const redisReply* r) { return r->integer; });
    if (left.size() >= need) {
      long long ms = left[need - 1] - since(v.start).count();
      ReplyPtr r = v.take(v.first([](const Answer& a) { return a.yes && a.counts; }));
      r->integer = std::max<long long>(ms, 0);
      return Reply(std::move(r));
    }
    // Lost once the members that still may hold it are fewer than a majority.
    if (left.size() + (v.size - v.tally.counting) < need) {
      // A member that says the hold was cancelled (-1, --cancel-running) names why.
      size_t no = v.first([](const Answer& a) {
        return a.main->type == REDIS_REPLY_INTEGER && a.main->integer == -1;
      });
      if (no == v.size)
        no = v.first([](const Answer& a) { return a.main->type == REDIS_REPLY_INTEGER; });
      if (no < v.size) {
        ReplyPtr r = v.take(no);
        r->integer = std::min<long long>(r->integer, 0);
        return Reply(std::move(r));
      }
      throw ReplyError(redis::error_line(v.tally));
    }
    throw v.unavailable("fewer than a majority" + v.of_n() +
                        " renewed the hold or said it is gone");
  }
};

class ReleaseRule : public Proposing {
 public:
  ReleaseRule() : Proposing(kReleaseFloorArg) {}
  int lease_arg() const override { return 0; }
  Millis settle() const override { return kReleasePatience; }
  bool gives_back() const override { return true; }
  bool refused_check_counts() const override { return false; }
  bool votes_yes(const redisReply* r) const override {
    return r->type == REDIS_REPLY_ARRAY && int_at(r, 0) == 1;
  }
  // Every member's answer decides, counted or not: a release takes nothing.
  std::optional<Deadline> decided(const Tally& t, size_t n, size_t need, Deadline,
                                  std::optional<Deadline>&) const override {
    return majority_said(t.yes, t.answered - t.yes, n, need);
  }
  Reply combine(QuorumVote& v) const override {
    const Tally& t = v.tally;
    const size_t need = v.majority;
    if (t.yes >= need) return Reply(v.take(v.first([](const Answer& a) { return a.yes; })));
    if (t.answered < need) throw v.unavailable("fewer than a majority" + v.of_n() + " answered");
    auto not_held = [](const Answer& a) { return !a.yes && !is_error(a.main); };
    const size_t other = v.first(not_held);
    if (other == v.size) throw ReplyError(redis::error_line(t));
    // "Not held" only from a majority: a hold on a bare majority, released by one of it
    // while the other does not answer, is neither released nor free as far as anyone can
    // tell (the unanswered member may still hold it, or release it when it runs the
    // request).
    if (static_cast<size_t>(std::count_if(v.answers.begin(), v.answers.end(), [&](const Answer& a) {
          return a.main && not_held(a);
        })) >= need)
      return Reply(v.take(other));
    throw v.unavailable("fewer than a majority" + v.of_n() +
                        " released the lock or said it is not held");
  }
};

class UnionRule : public Proposing {
 public:
  UnionRule() : Proposing(kForceReleaseFloorArg) {}
  int lease_arg() const override { return 0; }
  Millis settle() const override { return kReleasePatience; }
  bool gives_back() const override { return true; }
  bool refused_check_counts() const override { return false; }
  bool votes_yes(const redisReply*) const override { return true; }
  std::optional<Deadline> decided(const Tally& t, size_t, size_t need, Deadline,
                                  std::optional<Deadline>&) const override {
    if (t.answered >= need) return SteadyClock::now();
    return std::nullopt;
  }
  Reply combine(QuorumVote& v) const override {
    if (v.tally.answered < v.majority)
      throw v.unavailable("fewer than a majority" + v.of_n() + " answered");
    if (v.tally.error) throw ReplyError(redis::error_line(v.tally));
    size_t longest = v.first([](const Answer&) { return true; });
    for (size_t i = 0; i < v.size; ++i) {
      if (v.answers[i].main && v.answers[i].main->elements > v.answers[longest].main->elements)
        longest = i;
    }
    return Reply(v.take(longest));
  }
};

}  // namespace

void use_lock_quorum_rules() {
  static std::once_flag once;
  std::call_once(once, [] {
    static const GrantRule grant;
    static const RenewRule renew;
    static const ReleaseRule release;
    static const UnionRule union_rule;
    redis::register_quorum_rule("grant", grant);
    redis::register_quorum_rule("renew", renew);
    redis::register_quorum_rule("release", release);
    redis::register_quorum_rule("union", union_rule);
  });
}

}  // namespace rlock::prim
