#pragma once

#include <poll.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/quorum_rule.hpp"
#include "redis/quorum_vote.hpp"
#include "redis/retry.hpp"
#include "redis/script.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"

namespace rlock::redis {

// The I/O of a quorum over its N members' connections: every request is written to all of
// them before any reply is read, and the replies are read as they come, with a NOSCRIPT
// answered by the script's source and a member whose connection fails tried again where
// the request allows it. What the replies mean is left to the caller.
class QuorumMembers : public QuorumIo {
 public:
  // One command's arguments, built once and shared by every member it goes to and by the
  // record of each send (a copy a member would cost an allocation an argument).
  using Command = std::shared_ptr<const std::vector<std::string>>;
  using Commands = std::vector<Command>;
  // After each answer: from when on the others need not be waited for (nullopt: not yet).
  using Enough = std::function<std::optional<Deadline>(const Answers&)>;

  QuorumMembers(const Target& target, const ConnectOptions& options);
  // A one-shot command ends once a majority answered: the replies still owed to anything
  // but a request to take a lock are read for a short while first (see drain).
  ~QuorumMembers() override;

  size_t size() const { return members_.size(); }
  size_t majority() const { return members_.size() / 2 + 1; }
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  // Each member's connect options (subscribers open connections of their own).
  std::vector<ConnectOptions> each_options() const;
  // The longest a member's connection took to open so far.
  Millis slowest_open() const { return slowest_open_; }
  static constexpr Millis kOpenPatience{50};

  // Opens the members whose connection is closed or broken, all at once: once a majority is
  // open, the others get connect's patience; with `all`, each is waited for up to `until`.
  void reopen(Deadline until, bool all = false);
  // What write() records as the patience of its replies on the way out (see drain).
  void set_settle(Millis settle) { settle_ = settle; }
  // EVALSHA of `script` (a member that answers NOSCRIPT gets the request again with
  // sources_for: one more round trip, once per script and server start).
  Command eval(const Script& script, const std::vector<std::string_view>& keys,
               const std::vector<std::string_view>& args);
  // Writes `request` to member i in one write, with no reply waited for here (see drain);
  // a member whose connection fails is dropped.
  void write_or_drop(size_t i, const Commands& request);
  // Writes each member's commands (an empty list: nothing for that member), then reads the
  // replies as they come, until every member answered, `until`, or `enough` says the
  // outcome is known. A member that did not answer gets nullopt. With Retry::kIdempotent a
  // member whose connection fails, or that has not answered by half of what is left, gets
  // its commands again on a fresh connection.
  Answers exchange(const std::vector<Commands>& commands, Deadline until, const Enough& enough,
                   Retry retry);
  // How much later than its first send each member's last request of the last exchange
  // was written: 0 unless it was repeated (a member that ran an earlier try reports its
  // lease as left when the repeat ran).
  const std::vector<Millis>& repeated_after() const { return repeated_after_; }
  const std::string& failure(size_t i) const { return members_[i].failure; }

  // QuorumIo
  bool connected(size_t i) const override { return members_[i].conn.has_value(); }
  void write_only(const Script& script, const std::vector<std::string_view>& keys,
                  const std::vector<std::string_view>& args, const std::vector<bool>& to,
                  Millis settle) override;
  Answers exchange(const Script& script, const std::vector<std::string_view>& keys,
                   const std::vector<std::string_view>& args, const std::vector<bool>& to,
                   Deadline until, const std::function<bool(const Answers&)>& enough,
                   Millis settle) override;
  void note_failure(size_t i, std::string why) override { members_[i].failure = std::move(why); }
  std::string describe_missing(const std::vector<bool>& ok) const override;
  std::string member_name(size_t i) const override { return endpoints_[i].describe(); }

 private:
  // A command written to a member whose reply has not been read yet.
  struct Sent {
    Command cmd;
    unsigned long round = 0;  // the exchange it belongs to (see round_)
    Millis settle{0};         // how long its reply is waited for on the way out (see drain)
  };
  struct Member {
    ConnectOptions options;
    std::optional<Connection> conn;
    std::deque<Sent> in_flight;    // in the order written
    std::string failure;           // why it did not answer the last request
    std::set<std::string> cached;  // SHA1s this connection's server is known to have
  };
  class Round;  // one exchange's state (quorum_exchange.cpp)

  static bool is_noscript(const redisReply* r);
  // poll(2)'s timeout for `left`.
  static int poll_ms(Millis left);

  // Writes `commands` to m's connection in one write (no record in m.in_flight).
  static void send_commands(Member& m, const Commands& commands);
  // Closes m's connection, forgetting what it owes; `why` is its failure.
  void drop(Member& m, const std::string& why);
  // Reads what each member of `which` whose pollfd in `fds` (the same order) is ready has
  // sent; a member whose connection failed is dropped.
  void read_ready(const std::vector<pollfd>& fds, const std::vector<size_t>& which);
  // Writes `request` to m in one write and records it in m.in_flight. `sourced`: every
  // script goes with its source (see sources_for).
  void write(Member& m, const Commands& request, bool sourced = false);
  // `commands` with EVAL and the script's source for each EVALSHA that needs it: all of
  // them (`all`), or, for a request whose reply is waited for only on the way out
  // (settle_ > 0), those m's connection has not run yet, unless a NOSCRIPT may still come
  // back for a request before them (see the .cpp). A NOSCRIPT that comes after the process
  // ended would leave that request never run there. (Every request with its source on a
  // new connection would cost a one-shot `rlock lock` on a quorum of 3 about 0.3 ms: the
  // acquisition's script is 12 KB, hashed by each member.)
  Commands sources_for(Member& m, const Commands& commands, bool all);
  // For a reply to `sent` from an earlier exchange (true; false: this exchange's): a
  // NOSCRIPT gets the command again with the script's source.
  bool settle_late(Member& m, const Sent& sent, const redisReply* r);
  // Reads the replies still owed to requests with a Sent::settle, each for at most that
  // long (and --timeout) from now, answering NOSCRIPTs (settle_late).
  void drain() noexcept;
  // Opens a connection to each member in `which` at once, AUTH and SELECT included
  // (m.failure says why one did not open by `until`). Once `needed` opened, the others get
  // twice the slowest open seen so far (at least kOpenPatience): a member that accepts and
  // never finishes its TLS handshake, or never answers its AUTH, holds up no one.
  void connect(const std::vector<size_t>& which, size_t needed, Deadline until);
  // AUTH and SELECT on the members of `which` that opened, at once, answered before any
  // request is written: a request behind a SELECT the member refuses would run in database
  // 0, behind a refused AUTH as the default user. The same patience as connect's.
  void log_in(const std::vector<size_t>& which, size_t needed, Deadline until);
  // Reads what the members of `waiting` still owe for their login (`owed` each); returns
  // those still owing, counting the others in `done`.
  std::vector<size_t> read_logins(const std::vector<size_t>& waiting, std::vector<size_t>& owed,
                                  size_t& done);
  // Writes the login commands to the members of `which` that opened; returns those owing
  // replies (`owed` each), counting the others in `done`.
  std::vector<size_t> send_logins(const std::vector<size_t>& which, std::vector<size_t>& owed,
                                  size_t& done);
  // The replies owed to m on the way out (the longest Sent::settle).
  static Millis owed_patience(const Member& m);
  // `commands` for each member i with to[i] and a connection; nothing for the others.
  std::vector<Commands> for_members(const Command& command, const std::vector<bool>& to) const;

  std::vector<Member> members_;
  std::map<std::string, const char*> sources_;  // SHA1 -> source of the scripts sent
  std::vector<Endpoint> endpoints_;
  Millis timeout_;
  unsigned long round_ = 0;             // exchanges so far: replies of an earlier one are late
  std::vector<Millis> repeated_after_;  // see repeated_after()
  Millis settle_{0};                    // what write() records as Sent::settle
  Millis slowest_open_{0};              // the longest a member's connection took to open
};

}  // namespace rlock::redis
