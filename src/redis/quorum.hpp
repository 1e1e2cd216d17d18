#pragma once

#include <poll.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/dispatch.hpp"
#include "redis/quorum_restart_rule.hpp"
#include "redis/reply.hpp"
#include "redis/retry.hpp"
#include "redis/script.hpp"
#include "redis/subscriber.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"

namespace rlock::redis {

// The one-line refusal of `what` (a script or command without a majority rule) on a quorum.
UsageError refused_on_quorum(std::string_view what);

// N independent masters (redis-quorum://) behind a Topology: every request goes to all of
// them at once (all written before any reply is read) and their replies combine by the
// rule the script declares (redis/quorum_rule.hpp). A member whose data may be younger than
// the longest lease any rlock asked the members for (restarted without persistence: its
// uptime is shorter and rlock's first-write marker is younger than its start) does not
// count towards a majority until that time has passed: it may have lost a hold that it
// granted, and would hand out a second majority.
class Quorum : public Dispatch {
 public:
  Quorum(const Target& target, const ConnectOptions& options);
  ~Quorum() override;

  size_t size() const { return members_.size(); }
  size_t majority() const { return members_.size() / 2 + 1; }
  // The clock drift a hold allows for (RedLock's): 1% of the lease plus 2 ms.
  Millis drift(Millis lease) const override { return lease / 100 + Millis(2); }

  // Runs `script` on every member and combines the replies (Script::quorum); a script with
  // no rule throws UsageError before anything is sent. Members that have not answered by
  // the request's end, or once the outcome is known, are not waited for (their late replies
  // are skipped by the next request). Throws UnavailableError when fewer than a majority of
  // the members that count answered, or a majority granted a hold it cannot use (see
  // QuorumRule::kGrant), ReplyError for a member's error reply. `resend_args` go nowhere: a
  // member's resend is the same request again (see exchange).
  Reply run(const Script& script, const std::vector<std::string_view>& keys,
            const std::vector<std::string_view>& args, Retry retry, std::optional<Deadline> until,
            const std::vector<std::string_view>* resend_args) override;
  // run(): the members are independent masters, with no replicas to wait for.
  Synced run_synced(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry, std::string_view about,
                    bool judged_by_reply,
                    const std::vector<std::string_view>* resend_args) override;
  // Plain commands and pipelines have no majority rule: refused (refused_on_quorum).
  Reply command(const std::vector<std::string_view>& argv, Retry retry) override;
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands, Retry retry,
                              std::string_view key) override;
  void send(const std::vector<std::vector<std::string>>& commands) override;
  std::vector<Reply> receive(size_t replies) override;

  // A subscriber on every member that can be reached (at least a majority, else
  // UnavailableError), woken by a message on any of them.
  Subscriber subscribe(const std::vector<std::string>& channels,
                       const std::vector<std::string>& classic) override;
  // nullopt: no one server holds every key.
  std::optional<Subscriber> subscribe_pattern(const std::string&) override { return std::nullopt; }
  // Each member once, as a standalone topology of its own (inspect and doctor look at each).
  void for_each_master(Topology& self, const std::function<void(Topology&)>& fn) override;

  // Topology::send_cleanup on every member, each on a connection of its own.
  bool send_cleanup(const Script& script, const std::vector<std::string>& keys,
                    const std::vector<std::string>& args, Millis patience) noexcept override;

  bool replicated() const override { return false; }
  std::vector<Endpoint> members() const override { return endpoints_; }
  // Which members answer a PING within the request timeout, asked all at once: for each, ""
  // or why not. Inspect and doctor look at the members one by one, and would wait for each
  // that does not answer in turn.
  std::vector<std::string> silent_members() override;
  // The first member's: where requests without a majority rule would go, never a lock's.
  std::string server_name() override;
  std::optional<std::chrono::system_clock::time_point> server_certificate_expiry() override;

 private:
  // One command's arguments, built once and shared by every member it goes to and by the
  // record of each send (a copy a member would cost an allocation an argument).
  using Command = std::shared_ptr<const std::vector<std::string>>;
  using Commands = std::vector<Command>;
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
  // Writes each member's commands (an empty list: nothing for that member), then reads the
  // replies as they come, until every member answered, `until`, or `enough` says the
  // outcome is known. A member that did not answer gets nullopt.
  // `enough` says, after each answer, from when on the others need not be waited for
  // (nullopt: not yet known). With Retry::kIdempotent a member whose connection fails, or
  // that has not answered by half of what is left, gets its commands again on a fresh
  // connection (see run).
  std::vector<std::optional<std::vector<ReplyPtr>>> exchange(
      const std::vector<Commands>& commands, Deadline until,
      const std::function<std::optional<Deadline>(
          const std::vector<std::optional<std::vector<ReplyPtr>>>&)>& enough,
      Retry retry);
  // Opens a connection to each member in `which` at once, AUTH and SELECT included
  // (m.failure says why one did not open by `until`). Once `needed` opened, the others get
  // twice the slowest open seen so far (at least kOpenPatience): a member that accepts and
  // never finishes its TLS handshake, or never answers its AUTH, holds up no one.
  void connect(const std::vector<size_t>& which, size_t needed, Deadline until);
  // AUTH and SELECT on the members of `which` that opened, at once, answered before any
  // request is written: a request behind a SELECT the member refuses would run in database
  // 0, behind a refused AUTH as the default user. The same patience as connect's.
  void log_in(const std::vector<size_t>& which, size_t needed, Deadline until);
  static constexpr Millis kOpenPatience{50};
  // run() by `until`.
  Reply run_by(const Script& script, const std::vector<std::string_view>& keys,
               const std::vector<std::string_view>& args, Deadline until, Retry retry);
  // EVALSHA of `script` (a member that answers NOSCRIPT gets the request again with
  // sources_for: one more round trip, once per script and server start).
  Command eval(const Script& script, const std::vector<std::string_view>& keys,
               const std::vector<std::string_view>& args);
  // Raises the fencing token to `fence` on a majority of the members that count; throws
  // UnavailableError naming the members that did not confirm it.
  void write_back_fence(std::string_view fence_key, std::string_view lock_key,
                        std::string_view owner, long long fence, const std::vector<bool>& counts,
                        const std::vector<bool>& at_token, const std::vector<bool>& answered,
                        Deadline until);
  std::string describe_missing(const std::vector<bool>& answered) const;

  std::vector<Member> members_;
  std::map<std::string, const char*> sources_;  // SHA1 -> source of the scripts sent
  std::vector<Endpoint> endpoints_;
  std::vector<std::unique_ptr<Topology>> topologies_;
  Millis timeout_;
  unsigned long round_ = 0;  // exchanges so far: replies of an earlier one are late
  // How much later than its first send each member's last request of the last exchange
  // was written: 0 unless it was repeated (a member that ran an earlier try reports its
  // lease as left when the repeat ran).
  std::vector<Millis> repeated_after_;
  Millis settle_{0};        // what write() records as Sent::settle
  Millis slowest_open_{0};  // the longest a member's connection took to open
};

}  // namespace rlock::redis
