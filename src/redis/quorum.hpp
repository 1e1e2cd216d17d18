#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/dispatch.hpp"
#include "redis/quorum_members.hpp"
#include "redis/quorum_rule.hpp"
#include "util/error.hpp"

namespace rlock::redis {

// The one-line refusal of `what` (a script or command without a majority rule) on a quorum.
UsageError refused_on_quorum(std::string_view what);

// N independent masters (redis-quorum://) behind a Topology: every request goes to all of
// them at once (QuorumMembers) and their replies combine by the rule the script declares
// (redis/quorum_rule.hpp). A member whose data may be younger than the longest lease any
// rlock asked the members for (restarted without persistence: its uptime is shorter and
// rlock's first-write marker is younger than its start) does not count towards a majority
// until that time has passed (redis/quorum_restart_rule.hpp): it may have lost a hold that
// it granted, and would hand out a second majority.
class Quorum : public Dispatch {
 public:
  Quorum(const Target& target, const ConnectOptions& options);
  ~Quorum() override;

  // The clock drift a hold allows for (RedLock's): 1% of the lease plus 2 ms.
  Millis drift(Millis lease) const override { return lease / 100 + Millis(2); }

  // Runs `script` on every member and combines the replies by its rule (Script::quorum); a
  // script with no rule throws UsageError before anything is sent. Members that have not
  // answered by the request's end, or once the outcome is known, are not waited for (their
  // late replies are skipped by the next request). Throws UnavailableError when fewer than
  // a majority of the members that count answered, else what the rule's combination
  // throws. `resend_args` go nowhere: a member's resend is the same request again.
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
  std::vector<Endpoint> members() const override { return members_.endpoints(); }
  // Which members answer a PING within the request timeout, asked all at once: for each, ""
  // or why not. Inspect and doctor look at the members one by one, and would wait for each
  // that does not answer in turn.
  std::vector<std::string> silent_members() override;
  // The first member's: where requests without a majority rule would go, never a lock's.
  std::string server_name() override;
  std::optional<std::chrono::system_clock::time_point> server_certificate_expiry() override;

 private:
  // run() by `until`, with `rule` the script's.
  Reply run_by(const QuorumRule& rule, const Script& script,
               const std::vector<std::string_view>& keys, const std::vector<std::string_view>& args,
               Deadline until, Retry retry);
  // The request as every member gets it: the member check first where the rule has a
  // lease (`lease`, as sent), then the script with the rule's arguments for every member.
  QuorumMembers::Commands request(const QuorumRule& rule, const Script& script,
                                  const std::vector<std::string_view>& keys,
                                  const std::vector<std::string_view>& args,
                                  const std::string& lease);
  // Throws UnavailableError when fewer than a majority are connected (what gives something
  // back still goes to those that are, answered on the way out).
  void require_reachable(const QuorumRule& rule, const QuorumMembers::Commands& request);

  QuorumMembers members_;
  std::vector<std::unique_ptr<Topology>> topologies_;  // one standalone topology per member
};

}  // namespace rlock::redis
