#include "redis/quorum.hpp"

#include <algorithm>

#include "redis/errors.hpp"
#include "redis/quorum_restart_rule.hpp"
#include "redis/script_args.hpp"
#include "redis/topology.hpp"

namespace rlock::redis {

UsageError refused_on_quorum(std::string_view what) {
  return UsageError(
      "a quorum URL (redis-quorum://) serves locks only: semaphores, latches, rate limiters and "
      "delay queues have no sound majority semantics there (" +
      std::string(what) + "); use one server, Sentinel or a Cluster");
}

Quorum::Quorum(const Target& target, const ConnectOptions& options)
    : Dispatch(options), members_(target, options) {
  for (const Endpoint& member : members_.endpoints()) {
    ConnectOptions o = options;
    o.endpoint = member;
    topologies_.push_back(std::make_unique<Topology>(o));
  }
}

Quorum::~Quorum() = default;

Reply Quorum::run(const Script& script, const std::vector<std::string_view>& keys,
                  const std::vector<std::string_view>& args, Retry retry,
                  std::optional<Deadline> until, const std::vector<std::string_view>*) {
  const QuorumRule* rule = find_quorum_rule(script.quorum);
  if (!rule) throw refused_on_quorum(script.name);
  Deadline end = until ? *until : SteadyClock::now() + request_timeout();
  try {
    Reply r = run_by(*rule, script, keys, args, end, retry);
    failed_until_.reset();
    return r;
  } catch (const UnavailableError&) {
    failed_until_ = end;
    throw;
  }
}

QuorumMembers::Commands Quorum::request(const QuorumRule& rule, const Script& script,
                                        const std::vector<std::string_view>& keys,
                                        const std::vector<std::string_view>& args,
                                        const std::string& lease) {
  std::string keep;
  const std::vector<std::string_view> sent_args = rule.for_every_member(args, keep);
  QuorumMembers::Commands out;
  if (rule.lease_arg() > 0) {
    using Check = contract::quorum_member;
    out.push_back(members_.eval(scripts::quorum_member,
                                keys_of<Check>()
                                    .set(Check::kKeyLongestLease, kLongestLeaseKey)
                                    .set(Check::kKeyFirstWrite, kFirstWriteKey)
                                    .set(Check::kKeyStarted, kStartedKey)
                                    .list(),
                                args_of<Check>().set(Check::kArgLease, lease).list()));
  }
  out.push_back(members_.eval(script, keys, sent_args));
  return out;
}

void Quorum::require_reachable(const QuorumRule& rule, const QuorumMembers::Commands& request) {
  const size_t n = members_.size();
  std::vector<bool> reached(n);
  for (size_t i = 0; i < n; ++i) reached[i] = members_.connected(i);
  if (static_cast<size_t>(std::count(reached.begin(), reached.end(), true)) >= members_.majority())
    return;
  // Fewer than a majority connected and logged in (the others refused, or did not answer
  // AUTH or SELECT by the deadline): nothing can be decided, and the members that did are
  // not waited for with no time left (they would be named as not answering). What gives
  // something back still goes to them, answered on the way out (see QuorumMembers::drain).
  for (size_t i = 0; i < n && rule.gives_back(); ++i) {
    if (reached[i]) members_.write_or_drop(i, request);
  }
  throw UnavailableError("fewer than a majority of the " + std::to_string(n) +
                         " quorum members could be reached (" + members_.describe_missing(reached) +
                         ")");
}

Reply Quorum::run_by(const QuorumRule& rule, const Script& script,
                     const std::vector<std::string_view>& keys,
                     const std::vector<std::string_view>& args, Deadline until, Retry retry) {
  const Deadline start = SteadyClock::now();
  const bool checked = rule.lease_arg() > 0;
  members_.set_settle(rule.settle());
  const long long lease = checked ? std::stoll(std::string(args.at(rule.lease_arg() - 1))) : 0;
  members_.reopen(until);
  const QuorumMembers::Commands sent = request(rule, script, keys, args, std::to_string(lease));
  require_reachable(rule, sent);
  std::vector<QuorumMembers::Commands> commands(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_.connected(i)) commands[i] = sent;
  }
  std::optional<Deadline> state;
  Answers replies = members_.exchange(
      commands, until,
      [&](const Answers& r) {
        return rule.decided(tally(read_answers(rule, r, checked)), members_.size(),
                            members_.majority(), start, state);
      },
      retry);
  QuorumVote vote{keys,
                  args,
                  replies,
                  read_answers(rule, replies, checked),
                  {},
                  members_.size(),
                  members_.majority(),
                  start,
                  until,
                  lease,
                  drift(Millis(lease)),
                  members_.repeated_after(),
                  members_};
  vote.tally = tally(vote.answers);
  return rule.combine(vote);
}

Synced Quorum::run_synced(const Script& script, const std::vector<std::string_view>& keys,
                          const std::vector<std::string_view>& args, Retry retry,
                          std::string_view about, bool judged_by_reply,
                          const std::vector<std::string_view>* resend_args) {
  Acks acks;
  acks.about = std::string(about);
  acks.judged_by_reply = judged_by_reply;
  return {run(script, keys, args, retry, std::nullopt, resend_args), acks};
}

Reply Quorum::command(const std::vector<std::string_view>& argv, Retry) {
  throw refused_on_quorum(argv.empty() ? "a command" : std::string(argv.front()));
}

std::vector<Reply> Quorum::pipeline(const std::vector<std::vector<std::string>>&, Retry,
                                    std::string_view) {
  throw refused_on_quorum("a pipeline");
}

void Quorum::send(const std::vector<std::vector<std::string>>&) {
  throw refused_on_quorum("a pipeline");
}

// Nothing was sent (send() refuses): nothing is owed.
std::vector<Reply> Quorum::receive(size_t) { throw refused_on_quorum("a pipeline"); }

void Quorum::for_each_master(Topology&, const std::function<void(Topology&)>& fn) {
  for (auto& member : topologies_) fn(*member);
}

std::string Quorum::server_name() { return topologies_.front()->server_name(); }

std::optional<std::chrono::system_clock::time_point> Quorum::server_certificate_expiry() {
  return topologies_.front()->server_certificate_expiry();
}

std::vector<std::string> Quorum::silent_members() {
  const Deadline until = SteadyClock::now() + request_timeout();
  // Every member is waited for up to `until` (not the connects' patience for the rest once
  // enough opened): a slow member is not a silent one.
  members_.reopen(until, true);
  members_.set_settle(Millis(0));  // a PING still owed holds up nothing on the way out
  const QuorumMembers::Command ping =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"PING"});
  std::vector<QuorumMembers::Commands> commands(members_.size());
  size_t asked = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_.connected(i)) continue;
    commands[i] = {ping};
    ++asked;
  }
  Answers replies = members_.exchange(
      commands, until,
      [&](const Answers& r) -> std::optional<Deadline> {
        if (static_cast<size_t>(std::count_if(
                r.begin(), r.end(), [](const auto& a) { return a.has_value(); })) == asked)
          return SteadyClock::now();
        return std::nullopt;
      },
      Retry::kNever);
  std::vector<std::string> out(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    if (replies[i]) continue;
    out[i] = members_.failure(i).empty() ? "did not answer" : members_.failure(i);
  }
  return out;
}

Subscriber Quorum::subscribe(const std::vector<std::string>& channels,
                             const std::vector<std::string>& classic) {
  if (!classic.empty()) throw refused_on_quorum("another client's channels");
  // All at once: a member that is stopped (it accepts connections and answers nothing)
  // holds up no one once a majority confirmed.
  // Within limit_timeout's bound where one is set (exec's watch of its hold, which must not
  // keep the supervisor from its job for long).
  const Millis bound = request_timeout();
  std::vector<ConnectOptions> each = members_.each_options();
  for (ConnectOptions& o : each) {
    o.command_timeout = std::min(o.command_timeout, bound);
    o.connect_timeout = std::min(o.connect_timeout, bound);
  }
  const Millis patience = std::max(QuorumMembers::kOpenPatience, 2 * members_.slowest_open());
  std::vector<std::string> failures;
  std::vector<Subscriber> subs = Subscriber::open_each(
      each, channels, members_.majority(), patience, SteadyClock::now() + bound, failures);
  std::vector<bool> reached(members_.size());
  size_t confirmed_or_pending = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    reached[i] = failures[i].empty();
    if (!reached[i]) members_.note_failure(i, failures[i]);
    confirmed_or_pending += reached[i];
  }
  if (subs.empty() || confirmed_or_pending < members_.majority()) {
    throw UnavailableError("fewer than a majority of the " + std::to_string(members_.size()) +
                           " quorum members could be subscribed to (" +
                           members_.describe_missing(reached) + ")");
  }
  Subscriber joined = Subscriber::join(std::move(subs));
  std::vector<size_t> missing;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!reached[i]) missing.push_back(i);
  }
  if (missing.empty()) return joined;
  // A member down now, or whose connection was killed as it subscribed, is subscribed to
  // once it answers: its releases wake the waiter too, and its scripts take a waiter that
  // has no subscriber there for dead (out of that member's order of arrival).
  joined.refill([each = std::move(each), channels, missing = std::move(missing), patience,
                 timeout = options_.command_timeout](bool& none_missing) mutable {
    std::vector<ConnectOptions> these;
    for (size_t i : missing) these.push_back(each[i]);
    std::vector<std::string> failed(these.size());
    std::vector<Subscriber> added =
        Subscriber::open_each(these, channels, 0, patience, SteadyClock::now() + timeout, failed);
    std::vector<size_t> still;
    for (size_t k = 0; k < these.size(); ++k) {
      if (!failed[k].empty()) still.push_back(missing[k]);
    }
    missing = std::move(still);
    none_missing = missing.empty();
    return added;
  });
  return joined;
}

bool Quorum::send_cleanup(const Script& script, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args, Millis patience) noexcept {
  bool any = false;
  Millis each = patience / static_cast<long long>(std::max<size_t>(topologies_.size(), 1));
  for (auto& t : topologies_) any = t->send_cleanup(script, keys, args, each) || any;
  return any;
}

}  // namespace rlock::redis
