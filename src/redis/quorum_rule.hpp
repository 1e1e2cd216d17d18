#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/quorum_vote.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"

namespace rlock::redis {

// How long the end of a process waits for replies still owed by members that had not
// answered when a majority did (QuorumMembers::drain), for a request whose effect a member
// that never runs it keeps (a renewal, a token's write-back): less than the restart rule's
// join slack (quorum_restart_rule.cpp), so that a member frozen under the quorum's first use
// and thawed once that use ended still counts.
inline constexpr Millis kDrainPatience{100};

// What a rule may ask of the members beyond the replies to its request (a lock's fencing
// token written back before the reply is returned), and how it names them in a message.
class QuorumIo {
 public:
  virtual ~QuorumIo() = default;
  // True while member i has a connection (what it is sent goes out).
  virtual bool connected(size_t i) const = 0;
  // Writes `script` to each connected member i with to[i] and waits for no reply: each is
  // read on the way out, for at most `settle` (see kDrainPatience).
  virtual void write_only(const Script& script, const std::vector<std::string_view>& keys,
                          const std::vector<std::string_view>& args, const std::vector<bool>& to,
                          Millis settle) = 0;
  // Sends `script` to each connected member i with to[i] and reads the replies until
  // `enough` says so or `until`; a member whose connection fails gets it again (the script
  // must be idempotent). Replies still owed are read on the way out for `settle`.
  virtual Answers exchange(const Script& script, const std::vector<std::string_view>& keys,
                           const std::vector<std::string_view>& args, const std::vector<bool>& to,
                           Deadline until, const std::function<bool(const Answers&)>& enough,
                           Millis settle) = 0;
  // Records why member i did not do what was asked (named by describe_missing).
  virtual void note_failure(size_t i, std::string why) = 0;
  // "host:port: why; host:port" for each member i without ok[i].
  virtual std::string describe_missing(const std::vector<bool>& ok) const = 0;
  // Member i's host:port.
  virtual std::string member_name(size_t i) const = 0;
};

// One request's votes as its rule decides and combines them: the members' replies, how each
// was read (restart rule included) and their tally, and what the quorum knows of the
// request.
struct QuorumVote {
  const std::vector<std::string_view>& keys;  // as the caller gave them
  const std::vector<std::string_view>& args;  // as the caller gave them
  Answers& replies;
  std::vector<Answer> answers;
  Tally tally;
  size_t size = 0, majority = 0;
  Deadline start;       // the first send
  Deadline until;       // the request's end
  long long lease = 0;  // ARGV[lease_arg], 0 without one
  Millis drift{0};      // what the lease leaves for the members' clocks (Topology::drift)
  // How much later than its first send each member's last try was written (see
  // QuorumMembers::exchange): 0 unless it was repeated.
  const std::vector<Millis>& repeated_after;
  QuorumIo& io;

  // The first member whose answer `pred` accepts (size when none).
  size_t first(const std::function<bool(const Answer&)>& pred) const;
  // Takes ownership of member i's reply to the request.
  ReplyPtr take(size_t i) { return std::move(replies[i]->back()); }
  // " of the 3 quorum members"
  std::string of_n() const;
  // `what` as an UnavailableError naming the members that did not answer and those whose
  // answer did not count yet (the restart rule).
  UnavailableError unavailable(const std::string& what) const;
  // Member i's answer counts and says yes.
  bool counted_yes(size_t i) const { return answers[i].yes && answers[i].counts; }
};

// How the members' replies to one script make a quorum's reply: the part of a script's
// contract that only a quorum needs. A script names its rule (`-- @quorum NAME` in its .lua
// file, Script::quorum), and the module whose scripts they are provides it
// (register_quorum_rule), so that the quorum knows nothing of what its requests mean and
// the primitive has one code path on every topology.
class QuorumRule {
 public:
  virtual ~QuorumRule() = default;

  // ARGV index (from 1) of the lease the request asks for: the member check goes in front
  // of it (the restart rule, lua/quorum_member.lua). 0: none, and every member counts.
  virtual int lease_arg() const = 0;
  // How long a reply still owed is read for on the way out (0: not at all).
  virtual Millis settle() const = 0;
  // True when the request gives something back: it still goes to the members that could
  // be reached when fewer than a majority could.
  virtual bool gives_back() const = 0;
  // True when a member whose member check the ACL refused counts (its own script then holds
  // nothing there); false when its own script may have taken effect beside the refusal.
  virtual bool refused_check_counts() const = 0;
  // Whether member reply `r` says yes (granted, renewed, released).
  virtual bool votes_yes(const redisReply* r) const = 0;
  // The arguments every member gets instead of `args` (a proposal they all agree on);
  // `keep` holds what the views point to. By default `args` as they are.
  virtual std::vector<std::string_view> for_every_member(const std::vector<std::string_view>& args,
                                                         std::string& keep) const;
  // From when on the members that have not answered need not be waited for, after an
  // answer (nullopt: not known yet): `t` is the tally of the answers so far among `n`
  // members (`need` a majority), `start` the first send, `state` the request's own, kept
  // between answers (empty at first).
  virtual std::optional<Deadline> decided(const Tally& t, size_t n, size_t need, Deadline start,
                                          std::optional<Deadline>& state) const = 0;
  // The quorum's reply once the members answered (or `vote.until` passed). Throws
  // UnavailableError or ReplyError as Topology::run says.
  virtual Reply combine(QuorumVote& vote) const = 0;
};

// Makes `rule` the one scripts naming `name` declare; it must outlive every request.
void register_quorum_rule(std::string_view name, const QuorumRule& rule);
// The rule registered as `name`; nullptr for none (the script is refused on a quorum).
const QuorumRule* find_quorum_rule(std::string_view name);

// What to add to the member check's ACL refusal `refusal` (lua/quorum_member.lua) when it
// decides the quorum's reply. Redis refuses a script whose declared keys the user may not
// touch before it runs, in words that differ between servers (Redis 7.0: "...one of the
// keys used as arguments", Redis 8.0 and Valkey 8.1: "No permissions to access a key"), so
// only its code word and what else was refused tell: when the request's own script (the
// same command, the caller's keys) was not refused, the check's keys were. The check's own
// refusals ("NOPERM rlock needs ...") name what they need and get nothing added.
std::string member_check_refusal_note(std::string_view refusal, bool request_refused);

}  // namespace rlock::redis
