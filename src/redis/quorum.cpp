#include "redis/quorum.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "redis/errors.hpp"
#include "redis/quorum_rule.hpp"
#include "redis/quorum_vote.hpp"
#include "redis/topology.hpp"
#include "redis/wait_interrupt.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// How long the end of a process waits for replies still owed by members that had not
// answered when a majority did (Quorum::drain). A release that a member never ran leaves it
// holding (a minority) until its lease ends: Redis drops the commands of a client that
// disconnects while CLIENT PAUSE holds them (a failover pauses writes), so releases get
// longer (less than the restart rule's join slack (quorum_restart_rule.cpp): a member frozen under
// the quorum's first use and thawed once that use ended still counts). Renewals and a token's
// write-back lose nothing that matters in a minority.
constexpr Millis kDrainPatience{100};
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

bool is_noscript(const redisReply* r) { return is_error(r) && first_word(r) == "NOSCRIPT"; }

bool noscript(const std::vector<ReplyPtr>& replies) {
  return std::any_of(replies.begin(), replies.end(),
                     [](const ReplyPtr& r) { return is_noscript(r.get()); });
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

// Takes ownership of member i's script reply out of `replies`.
ReplyPtr take(Answers& replies, size_t i) { return std::move(replies[i]->back()); }

}  // namespace

UsageError refused_on_quorum(std::string_view what) {
  return UsageError(
      "a quorum URL (redis-quorum://) serves locks only: semaphores, latches, rate limiters and "
      "delay queues have no sound majority semantics there (" +
      std::string(what) + "); use one server, Sentinel or a Cluster");
}

Quorum::Quorum(const Target& target, const ConnectOptions& options)
    : Dispatch(options), timeout_(options.command_timeout) {
  for (const Endpoint& seed : target.seeds) {
    Member m;
    m.options = options;
    m.options.endpoint = target.endpoint.at(seed.host, seed.port);
    endpoints_.push_back(m.options.endpoint);
    topologies_.push_back(std::make_unique<Topology>(m.options));
    members_.push_back(std::move(m));
  }
}

// A one-shot command ends once a majority answered: the replies still owed to anything but
// a request to take a lock are read for a short while first (see kReleasePatience, drain).
Quorum::~Quorum() { drain(); }

Quorum::Command Quorum::eval(const Script& script, const std::vector<std::string_view>& keys,
                             const std::vector<std::string_view>& args) {
  sources_[script.sha1] = script.source;
  std::vector<std::string> cmd = {"EVALSHA", script.sha1, std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return std::make_shared<const std::vector<std::string>>(std::move(cmd));
}

namespace {
bool is_evalsha(const std::vector<std::string>& cmd) {
  return cmd.size() > 1 && cmd[0] == "EVALSHA";
}
}  // namespace

Quorum::Commands Quorum::sources_for(Member& m, const Commands& commands, bool all) {
  // An EVALSHA still unanswered that m's server may not have comes back NOSCRIPT and runs
  // when it is sent again (settle_late): a request after it keeps its order only if it is
  // sent again too, so it goes as EVALSHA as well.
  bool behind_unsure = std::any_of(m.in_flight.begin(), m.in_flight.end(), [&](const Sent& s) {
    return is_evalsha(*s.cmd) && !m.cached.count((*s.cmd)[1]);
  });
  Commands out = commands;
  for (Command& cmd : out) {
    if (!is_evalsha(*cmd)) continue;
    const std::string& sha = (*cmd)[1];
    const bool known = m.cached.count(sha) > 0;
    if (!all && (known || settle_.count() == 0 || behind_unsure)) {
      behind_unsure = behind_unsure || !known;
      continue;
    }
    // The server caches what EVAL ran: later EVALSHAs on this connection find it.
    m.cached.insert(sha);
    auto sourced = std::make_shared<std::vector<std::string>>(*cmd);
    (*sourced)[0] = "EVAL";
    (*sourced)[1] = sources_.at(sha);
    cmd = std::move(sourced);
  }
  return out;
}

void Quorum::connect(const std::vector<size_t>& which, size_t needed, Deadline until) {
  std::vector<ConnectOptions> each;
  for (size_t i : which) each.push_back(members_[i].options);
  std::vector<std::string> failures;
  std::vector<std::optional<Connection>> opened = Connection::open_each_unauthenticated(
      each, needed, std::max(kOpenPatience, 2 * slowest_open_), until, failures, slowest_open_);
  for (size_t k = 0; k < which.size(); ++k) {
    Member& m = members_[which[k]];
    m.conn.reset();
    m.in_flight.clear();
    m.cached.clear();
    m.failure = failures[k];
    if (opened[k]) m.conn.emplace(std::move(*opened[k]));
  }
  log_in(which, needed, until);
}

void Quorum::log_in(const std::vector<size_t>& which, size_t needed, Deadline until) {
  std::vector<size_t> waiting, owed(members_.size(), 0);
  size_t done = 0;
  for (size_t i : which) {
    Member& m = members_[i];
    if (!m.conn) continue;
    auto login = Connection::login_commands(m.options.endpoint);
    if (login.empty()) {
      ++done;
      continue;
    }
    try {
      m.conn->send(login);
      owed[i] = login.size();
      waiting.push_back(i);
    } catch (const Error& e) {
      drop(m, e.what());
    }
  }
  const Deadline start = SteadyClock::now();
  std::optional<Deadline> others_until;
  while (!waiting.empty()) {
    std::vector<size_t> still;
    for (size_t i : waiting) {
      Member& m = members_[i];
      try {
        while (owed[i] > 0) {
          ReplyPtr r = m.conn->buffered_reply("from a quorum member");
          if (!r) break;
          if (r->type == REDIS_REPLY_ERROR) {
            drop(m, "refused the connection: " + std::string(r->str, r->len));
            break;
          }
          --owed[i];
        }
      } catch (const Error& e) {
        drop(m, e.what());
      }
      if (!m.conn) continue;
      if (owed[i] == 0) {
        ++done;
      } else {
        still.push_back(i);
      }
    }
    waiting = std::move(still);
    if (done >= needed && !others_until)
      others_until = SteadyClock::now() + std::max(kOpenPatience, 2 * since(start));
    const Deadline wake = others_until ? std::min(until, *others_until) : until;
    if (waiting.empty()) break;
    if (SteadyClock::now() >= wake) {
      for (size_t i : waiting) drop(members_[i], "did not answer AUTH or SELECT in time");
      break;
    }
    std::vector<pollfd> fds;
    for (size_t i : waiting) fds.push_back({members_[i].conn->fd(), POLLIN, 0});
    const Millis left = std::max(millis_until(wake), Millis(1));
    if (poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1 << 30))) <
            0 &&
        errno != EINTR)
      break;
    read_ready(fds, waiting);
  }
}

void Quorum::read_ready(const std::vector<pollfd>& fds, const std::vector<size_t>& which) {
  for (size_t k = 0; k < fds.size(); ++k) {
    if (!fds[k].revents) continue;
    try {
      members_[which[k]].conn->read_available("from a quorum member");
    } catch (const Error& e) {
      drop(members_[which[k]], e.what());
    }
  }
}

void Quorum::drop(Member& m, const std::string& why) {
  m.failure = why;
  m.conn.reset();
  m.in_flight.clear();
  m.cached.clear();
}

void Quorum::send_commands(Member& m, const Commands& commands) {
  std::vector<std::vector<std::string_view>> views;
  views.reserve(commands.size());
  for (const Command& cmd : commands) views.emplace_back(cmd->begin(), cmd->end());
  m.conn->send(views);
}

void Quorum::write(Member& m, const Commands& request, bool sourced) {
  const Commands sent = sources_for(m, request, sourced);
  send_commands(m, sent);
  for (const Command& cmd : sent) m.in_flight.push_back({cmd, round_, settle_});
}

bool Quorum::settle_late(Member& m, const Sent& sent, const redisReply* r) {
  const bool missing = is_noscript(r);
  if (!missing && is_evalsha(*sent.cmd)) m.cached.insert((*sent.cmd)[1]);
  if (sent.round == round_) return false;
  // A late reply to a request nobody waited for (a majority had answered). A member that
  // did not have the script ran nothing of it: it gets the script's source now, or it
  // would never run that request (a release left there until its lease ends, a queue
  // that differs between the members).
  if (missing && is_evalsha(*sent.cmd)) {
    Sent again = sent;
    again.cmd = sources_for(m, {sent.cmd}, true).front();
    send_commands(m, {again.cmd});
    m.in_flight.push_back(std::move(again));
  }
  return true;
}

void Quorum::drain() noexcept {
  ++round_;  // every reply still owed is a late one now
  const Deadline start = SteadyClock::now();
  auto patience = [](const Member& m) {
    Millis most{0};
    for (const Sent& s : m.in_flight) most = std::max(most, s.settle);
    return most;
  };
  while (true) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    Millis longest{0};
    for (size_t i = 0; i < members_.size(); ++i) {
      Member& m = members_[i];
      // A request to take a lock that a member answers late, NOSCRIPT or not at all took
      // nothing there: its reply is not waited for (each is a wake-up of that member's
      // server, on the way out of every `rlock lock`). A release (forced too), a renewal or
      // a token's write-back that a member never ran leaves a hold or a token behind.
      if (!m.conn || patience(m).count() == 0) continue;  // a late grant is not even read
      try {
        while (ReplyPtr r = m.conn->buffered_reply("from a quorum member")) {
          Sent sent = std::move(m.in_flight.front());
          m.in_flight.pop_front();
          settle_late(m, sent, r.get());
        }
      } catch (const Error& e) {
        drop(m, e.what());
        continue;
      }
      const Millis owed = patience(m);
      if (owed.count() == 0) continue;
      longest = std::max(longest, owed);
      fds.push_back({m.conn->fd(), POLLIN, 0});
      which.push_back(i);
    }
    const Millis left = millis_until(start + std::min(timeout_, longest));
    if (fds.empty() || left.count() <= 0) return;
    if (poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0 && errno != EINTR) return;
    read_ready(fds, which);
  }
}

std::vector<std::optional<std::vector<ReplyPtr>>> Quorum::exchange(
    const std::vector<Commands>& commands, Deadline until,
    const std::function<std::optional<Deadline>(const Answers&)>& enough, Retry retry) {
  const size_t n = members_.size();
  ++round_;
  repeated_after_.assign(n, Millis(0));
  std::vector<Deadline> first_sent(n);
  std::optional<Deadline> decide_by;  // enough's: when to stop waiting for the others
  bool noscript_seen = false;
  Answers out(n);
  std::vector<std::vector<ReplyPtr>> got(n);
  std::vector<bool> pending(n, false);
  std::vector<bool> sourced(n, false);  // sent again with EVAL after a NOSCRIPT
  std::vector<int> tries(n, 0);
  // When a member that has not answered gets the request again on a fresh connection (as
  // Topology::run does on one server): half of what is left, the last try all of it.
  std::vector<Deadline> resend_at(n, until);
  auto send = [&](size_t i) {
    Member& m = members_[i];
    ++tries[i];
    const bool last = retry != Retry::kIdempotent || tries[i] >= kMaxTries;
    const Millis left = std::max(millis_until(until), Millis(1));
    resend_at[i] = last ? until : SteadyClock::now() + std::max(left / 2, Millis(1));
    m.conn->set_timeout(left);
    got[i].clear();
    // A lease the member reports to a repeat began at the latest when the repeat was
    // sent: counted from the first send, that much more of it is left.
    const Deadline now = SteadyClock::now();
    if (tries[i] == 1) first_sent[i] = now;
    repeated_after_[i] = std::chrono::duration_cast<Millis>(now - first_sent[i]);
    write(m, commands[i], sourced[i]);
    pending[i] = true;
  };
  // A member whose connection failed under the request, or that has not answered by its
  // resend time: the request again on a fresh connection while tries and time are left (an
  // idempotent request: a repeat of one that ran reports what it did), else no answer.
  auto fail = [&](size_t i, const std::string& why) {
    Member& m = members_[i];
    drop(m, why);
    pending[i] = false;
    while (retry == Retry::kIdempotent && tries[i] < kMaxTries && SteadyClock::now() < until) {
      connect({i}, 1, until);
      if (!m.conn) return;
      try {
        send(i);
        return;
      } catch (const Error& e) {
        drop(m, e.what());
        pending[i] = false;
      }
    }
  };
  // Every request is written before any reply is read: the members work at once.
  for (size_t i = 0; i < n; ++i) {
    if (commands[i].empty() || !members_[i].conn) continue;
    try {
      send(i);
    } catch (const Error& e) {
      fail(i, e.what());
    }
  }
  while (true) {
    bool answered = false;
    for (size_t i = 0; i < n; ++i) {
      if (!pending[i]) continue;
      Member& m = members_[i];
      try {
        while (ReplyPtr r = m.conn->buffered_reply("from a quorum member")) {
          Sent sent = std::move(m.in_flight.front());
          m.in_flight.pop_front();
          if (settle_late(m, sent, r.get())) continue;
          got[i].push_back(std::move(r));
          if (got[i].size() == commands[i].size() && !sourced[i] && noscript(got[i])) {
            // A member that has not cached a script (restarted, SCRIPT FLUSH) ran nothing
            // of it: the same requests again with their sources, on the same connection.
            write(m, commands[i], true);
            sourced[i] = true;
            noscript_seen = true;
            got[i].clear();
            continue;
          }
          if (got[i].size() == commands[i].size()) {
            out[i] = std::move(got[i]);
            pending[i] = false;
            answered = true;
            break;
          }
        }
      } catch (const Error& e) {
        fail(i, e.what());
      }
    }
    if (answered && enough) decide_by = enough(out);
    if (decide_by && SteadyClock::now() >= *decide_by) break;
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    Deadline wake = decide_by ? std::min(until, *decide_by) : until;
    for (size_t i = 0; i < n; ++i) {
      if (!pending[i]) continue;
      fds.push_back({members_[i].conn->fd(), POLLIN, 0});
      which.push_back(i);
      wake = std::min(wake, resend_at[i]);
    }
    if (fds.empty()) break;
    if (millis_until(until).count() <= 0) {
      for (size_t i : which) {
        members_[i].failure = "did not answer within " + format_duration(timeout_) + " (--timeout)";
      }
      break;
    }
    const Millis left = std::max(millis_until(wake), Millis(0));
    const int cut = WaitInterrupt::fd();
    if (cut >= 0) fds.push_back({cut, POLLIN, 0});
    int rc =
        poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (rc < 0 && errno != EINTR) break;
    // (The replies still owed are skipped by the next exchange, as after a timeout.)
    if (rc > 0 && cut >= 0 && fds.back().revents)
      throw InterruptedError("the wait for the quorum members was cut short");
    for (size_t k = 0; k < which.size(); ++k) {
      const size_t i = which[k];
      try {
        if (rc > 0 && fds[k].revents) {
          members_[i].conn->read_available("from a quorum member");
        } else if (SteadyClock::now() >= resend_at[i] && resend_at[i] < until) {
          fail(i, "did not answer within half of what was left of --timeout");
        }
      } catch (const Error& e) {
        fail(i, e.what());
      }
    }
  }
  // Members that lost their scripts (a new deployment, a restart) answer NOSCRIPT, and one
  // that answers after the majority did would never run the request: a long-lived
  // process (exec) asks next only at its renewal. When a member said so, the others' late
  // replies are waited for a short while now, and a NOSCRIPT among them answered. A grant
  // is no exception then: the members that had not answered most likely lost the scripts
  // too (a deployment, every member restarted), and one left holding nothing would be
  // taken by the next waiter while the holder it reported has only a bare majority.
  if (noscript_seen) {
    for (size_t i = 0; i < n; ++i) {
      if (!pending[i]) continue;
      for (Sent& s : members_[i].in_flight) {
        if (s.round == round_) s.settle = std::max(s.settle, kDrainPatience);
      }
    }
    drain();
  }
  return out;
}

std::string Quorum::describe_missing(const std::vector<bool>& answered) const {
  std::string out;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (answered[i]) continue;
    out += (out.empty() ? "" : "; ") + endpoints_[i].describe();
    if (!members_[i].failure.empty()) out += ": " + members_[i].failure;
  }
  return out;
}

void Quorum::write_back_fence(std::string_view fence_key, std::string_view lock_key,
                              std::string_view owner, long long fence,
                              const std::vector<bool>& counts, const std::vector<bool>& at_token,
                              const std::vector<bool>& answered, Deadline until) {
  // A member whose own counter gave the token holds it already (lock_fence_raise.lua would
  // change nothing there): it counts as written and is not asked. Each request a member
  // serves is a wake-up of its server (a PING's round trip took 80-95 us on the 2-core VM
  // of the benchmark), and a re-entry whose members agree needs no second round trip.
  std::vector<Commands> commands(members_.size());
  const std::string token = std::to_string(fence);
  const Command raise = eval(scripts::lock_fence_raise, {fence_key, lock_key}, {token, owner});
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].conn && !at_token[i]) commands[i].push_back(raise);
  }
  auto raised = [&](const Answers& replies) {
    size_t ok = 0;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (!counts[i]) continue;
      if (at_token[i] || (replies[i] && !is_error(replies[i]->front().get()))) ++ok;
    }
    return ok;
  };
  // Its replies are read before the process exits (see drain): a write-back still queued
  // in a socket that is closed with a reply unread is reset away, and that member keeps a
  // later token of its own for this hold (a test saw a claim report it).
  settle_ = kDrainPatience;
  if (raised(Answers(members_.size())) >= majority()) {
    // A majority has it already (a re-entry, as a rule): a member that answered with
    // another token gets it without being waited for here (a stopped member holds up no
    // re-entry), one that has not answered yet nothing.
    for (size_t i = 0; i < members_.size(); ++i) {
      if (commands[i].empty() || !answered[i]) continue;
      try {
        write(members_[i], commands[i]);
      } catch (const Error& e) {
        drop(members_[i], e.what());
      }
    }
    return;
  }
  Answers replies = exchange(
      commands, until,
      [&](const Answers& r) -> std::optional<Deadline> {
        if (raised(r) >= majority()) return SteadyClock::now();
        return std::nullopt;
      },
      Retry::kIdempotent);
  if (raised(replies) < majority()) {
    std::vector<bool> wrote(members_.size());
    for (size_t i = 0; i < replies.size(); ++i) {
      wrote[i] = counts[i] && (at_token[i] || (replies[i] && !is_error(replies[i]->front().get())));
      if (replies[i] && !wrote[i])
        members_[i].failure =
            "answered " + std::string(replies[i]->front()->str, replies[i]->front()->len);
    }
    throw UnavailableError(
        "the fencing token's write-back got no confirmed reply from a majority (" +
        describe_missing(wrote) + ")");
  }
}

Reply Quorum::run(const Script& script, const std::vector<std::string_view>& keys,
                  const std::vector<std::string_view>& args, Retry retry,
                  std::optional<Deadline> until, const std::vector<std::string_view>*) {
  Deadline end = until ? *until : SteadyClock::now() + request_timeout();
  try {
    Reply r = run_by(script, keys, args, end, retry);
    failed_until_.reset();
    return r;
  } catch (const UnavailableError&) {
    failed_until_ = end;
    throw;
  }
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

Reply Quorum::run_by(const Script& script, const std::vector<std::string_view>& keys,
                     const std::vector<std::string_view>& args, Deadline until, Retry retry) {
  const QuorumRule* rule = find_quorum_rule(script.quorum);
  if (!rule) {
    throw refused_on_quorum(script.name);
  }
  const Deadline start = SteadyClock::now();
  const bool checked = rule->lease_arg > 0;
  switch (rule->kind) {  // see drain
    case QuorumRule::Kind::kGrant:
      settle_ = Millis(0);
      break;
    case QuorumRule::Kind::kRenew:
      settle_ = kDrainPatience;
      break;
    case QuorumRule::Kind::kRelease:
    case QuorumRule::Kind::kUnion:
      settle_ = kReleasePatience;
      break;
  }
  const long long lease = checked ? std::stoll(std::string(args.at(rule->lease_arg - 1))) : 0;
  std::vector<size_t> closed;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].conn || members_[i].conn->broken()) closed.push_back(i);
  }
  const size_t open = members_.size() - closed.size();
  if (!closed.empty()) connect(closed, open < majority() ? majority() - open : 0, until);
  std::vector<Commands> commands(members_.size());
  const std::string lease_arg = std::to_string(lease);
  std::vector<std::string_view> sent_args = args;
  const std::string floor = rule->floor_arg > 0 ? fence_floor() : std::string();
  if (rule->floor_arg > 0) {
    sent_args.resize(std::max(sent_args.size(), size_t(rule->floor_arg)));
    sent_args[rule->floor_arg - 1] = floor;
  }
  Commands request;
  if (checked)
    request.push_back(
        eval(scripts::quorum_member, {kLongestLeaseKey, kFirstWriteKey, kStartedKey}, {lease_arg}));
  request.push_back(eval(script, keys, sent_args));
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].conn) commands[i] = request;
  }
  const size_t n = members_.size(), need = majority();
  std::vector<bool> reached(n);
  for (size_t i = 0; i < n; ++i) reached[i] = members_[i].conn.has_value();
  if (static_cast<size_t>(std::count(reached.begin(), reached.end(), true)) < need) {
    // Fewer than a majority connected and logged in (the others refused, or did not answer
    // AUTH or SELECT by the deadline): nothing can be decided, and the members that did
    // are not waited for with no time left (they would be named as not answering). What
    // gives something back still goes to them, answered on the way out (see drain).
    const bool gives_back =
        rule->kind == QuorumRule::Kind::kRelease || rule->kind == QuorumRule::Kind::kUnion;
    for (size_t i = 0; i < n && gives_back; ++i) {
      if (!reached[i]) continue;
      try {
        write(members_[i], commands[i]);
      } catch (const Error& e) {
        drop(members_[i], e.what());
      }
    }
    throw UnavailableError("fewer than a majority of the " + std::to_string(n) +
                           " quorum members could be reached (" + describe_missing(reached) + ")");
  }
  std::optional<Deadline> split_until;
  Answers replies = exchange(
      commands, until,
      [&](const Answers& r) -> std::optional<Deadline> {
        Tally t = tally(read_answers(*rule, r, checked));
        const bool release = rule->kind == QuorumRule::Kind::kRelease;
        // A member not counted yet (the restart rule) decides nothing: its answer neither
        // makes a majority nor rules one out, and ending on it would report a busy lock as
        // fewer than a majority answering (exit 69, a wait given up) while a member that
        // counts had not answered yet.
        size_t yes = release ? t.yes : t.yes_counting;
        size_t no = release ? t.answered - t.yes : t.counting - t.yes_counting;
        const bool grant = rule->kind == QuorumRule::Kind::kGrant;
        // A refusal (busy on a majority) waits a while for the members that have not
        // answered: one that finds the lock free grants it to this request, and a grant
        // nobody hears of would stay there for the whole lease (a busy `lock -n` left one
        // on a free member in about a quarter of its runs). Answered, it is given back;
        // unanswered, everything is given back by the request's id (see below).
        auto patience = [&] {
          if (!split_until)
            split_until = SteadyClock::now() + std::max(kSplitPatience, 2 * since(start));
          return split_until;
        };
        if (grant && yes < need && no > n - need && t.answered < n) return patience();
        if (rule->kind == QuorumRule::Kind::kUnion ? t.answered >= need
                                                   : yes >= need || no > n - need)
          return SteadyClock::now();
        // A grant split between the members that answered: the others decide it, and are
        // waited for only a while (twice what the answers took, at least kSplitPatience),
        // not the whole --timeout a stopped member would take. Undecided, it is given back
        // by its id on every member (a later grant too), and a wait tries again.
        if (grant && t.counting >= need) return patience();
        return std::nullopt;
      },
      retry);
  std::vector<Answer> answers = read_answers(*rule, replies, checked);
  Tally t = tally(answers);
  std::vector<bool> counts(n), answered(n);
  for (size_t i = 0; i < n; ++i) {
    counts[i] = answers[i].counts;
    answered[i] = answers[i].main != nullptr;
  }
  auto unavailable = [&](const std::string& what) {
    std::string young;
    for (size_t i = 0; i < n; ++i) {
      if (answered[i] && !counts[i])
        young += (young.empty() ? "" : ", ") + endpoints_[i].describe();
    }
    // (Every member may have answered: those not counted yet are named below.)
    const std::string missing = describe_missing(answered);
    std::string line = what + (missing.empty() ? "" : " (" + missing + ")");
    if (!young.empty()) {
      line += "; not counted until their data is older than the longest lease: " + young;
    }
    return UnavailableError(line);
  };
  const std::string of_n = " of the " + std::to_string(n) + " quorum members";
  auto first = [&](auto pred) -> size_t {
    for (size_t i = 0; i < n; ++i) {
      if (answers[i].main && pred(answers[i])) return i;
    }
    return n;
  };

  switch (rule->kind) {
    case QuorumRule::Kind::kGrant: {
      // The lease in force is what a majority has at least (a re-entry keeps a longer one).
      std::vector<long long> pttls;  // as left at the first send
      for (size_t i = 0; i < n; ++i) {
        const Answer& a = answers[i];
        if (a.yes && a.counts)
          pttls.push_back(left_since_first_send(int_at(a.main, 3), repeated_after_[i], lease));
      }
      std::sort(pttls.rbegin(), pttls.rend());
      const long long in_force = pttls.size() >= need ? pttls[need - 1] : 0;
      auto validity = [&] { return Millis(in_force) - since(start) - drift(Millis(lease)); };
      // A majority granted, but nothing is held: an outage, not a busy lock (nobody else
      // holds it). The caller gives back what was granted, by the request's id.
      auto too_late = [&](const std::string& what) {
        return UnusableGrantError("a majority" + of_n + " granted the lock, but " + what +
                                  " after the lease ran out (" + format_duration(since(start)) +
                                  " after the request, lease " + format_duration(Millis(in_force)) +
                                  " less a drift allowance of " +
                                  format_duration(drift(Millis(lease))) + "); not held");
      };
      if (t.yes_counting >= need) {
        if (validity().count() <= 0) throw too_late("the members answered");
        long long fence = 0, count = 0, fresh = 0;
        for (const Answer& a : answers) {
          if (!a.yes) continue;
          fence = std::max(fence, int_at(a.main, rule->fence_at));
          count = std::max(count, int_at(a.main, 1));
          fresh = std::max(fresh, int_at(a.main, 4));
        }
        std::vector<bool> at_token(n);
        for (size_t i = 0; i < n; ++i)
          at_token[i] = answers[i].yes && int_at(answers[i].main, rule->fence_at) == fence;
        try {
          write_back_fence(keys.at(rule->fence_key - 1), keys.at(rule->lock_key - 1),
                           args.at(rule->owner_arg - 1), fence, counts, at_token, answered, until);
        } catch (const UnavailableError& e) {
          throw UnusableGrantError("a majority" + of_n + " granted the lock, but " + e.what() +
                                   "; not held");
        }
        if (validity().count() <= 0) throw too_late("the fencing token's write-back answered");
        ReplyPtr r = take(replies, first([](const Answer& a) { return a.yes && a.counts; }));
        r->element[1]->integer = count;
        r->element[rule->fence_at]->integer = fence;
        r->element[3]->integer = in_force;
        r->element[4]->integer = fresh;
        return Reply(std::move(r));
      }
      if (t.counting < need) throw unavailable("fewer than a majority" + of_n + " answered");
      // An error from so many counting members that no majority can grant decides, even
      // beside grants: a request inside an exec that holds the lock is refused as waiting
      // for itself (SELF) by every member with the outer hold, and a member without it
      // (down when the hold was taken) grants. Retried, it would be split for ever. What
      // was granted is given back by the request's id (see prim::wait_for).
      if (t.error && (t.yes == 0 || t.errors_counting > n - need)) throw ReplyError(error_line(t));
      size_t busy = first([](const Answer& a) {
        return !a.yes && a.main->type == REDIS_REPLY_ARRAY && a.main->elements >= 7;
      });
      // Busy everywhere that answered, and everyone answered: nothing was taken.
      if (t.yes == 0 && busy < n && t.answered == n) return Reply(take(replies, busy));
      size_t any = busy < n ? busy : first([](const Answer& a) { return a.yes; });
      if (any == n) throw unavailable("no majority" + of_n + " answered the lock request");
      ReplyPtr r = take(replies, any);
      r->element[0]->integer = -2;  // taken on some members only: given back by its id
      return Reply(std::move(r));
    }
    case QuorumRule::Kind::kRenew: {
      std::vector<long long> left;  // as left at the first send
      for (size_t i = 0; i < n; ++i) {
        const Answer& a = answers[i];
        if (a.yes && a.counts)
          left.push_back(left_since_first_send(a.main->integer, repeated_after_[i], lease));
      }
      std::sort(left.rbegin(), left.rend());
      if (left.size() >= need) {
        long long ms = left[need - 1] - since(start).count();
        ReplyPtr r = take(replies, first([](const Answer& a) { return a.yes && a.counts; }));
        r->integer = std::max<long long>(ms, 0);
        return Reply(std::move(r));
      }
      // Lost once the members that still may hold it are fewer than a majority.
      if (left.size() + (n - t.counting) < need) {
        size_t no = first([](const Answer& a) { return a.main->type == REDIS_REPLY_INTEGER; });
        if (no < n) {
          ReplyPtr r = take(replies, no);
          r->integer = 0;
          return Reply(std::move(r));
        }
        throw ReplyError(error_line(t));
      }
      throw unavailable("fewer than a majority" + of_n + " renewed the hold or said it is gone");
    }
    case QuorumRule::Kind::kRelease: {
      if (t.yes >= need) return Reply(take(replies, first([](const Answer& a) { return a.yes; })));
      if (t.answered < need) throw unavailable("fewer than a majority" + of_n + " answered");
      auto not_held = [](const Answer& a) { return !a.yes && !is_error(a.main); };
      const size_t other = first(not_held);
      if (other == n) throw ReplyError(error_line(t));
      // "Not held" only from a majority: a hold on a bare majority, released by one of it
      // while the other does not answer, is neither released nor free as far as anyone
      // can tell (the unanswered member may still hold it, or release it when it runs the
      // request).
      if (static_cast<size_t>(std::count_if(answers.begin(), answers.end(), [&](const Answer& a) {
            return a.main && not_held(a);
          })) >= need)
        return Reply(take(replies, other));
      throw unavailable("fewer than a majority" + of_n +
                        " released the lock or said it is not held");
    }
    case QuorumRule::Kind::kUnion: {
      if (t.answered < need) throw unavailable("fewer than a majority" + of_n + " answered");
      if (t.error) throw ReplyError(error_line(t));
      size_t longest = first([](const Answer&) { return true; });
      for (size_t i = 0; i < n; ++i) {
        if (answers[i].main && answers[i].main->elements > answers[longest].main->elements)
          longest = i;
      }
      return Reply(take(replies, longest));
    }
  }
  throw UsageError("unknown quorum rule");
}

std::vector<std::string> Quorum::silent_members() {
  const Deadline until = SteadyClock::now() + request_timeout();
  std::vector<size_t> closed;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].conn || members_[i].conn->broken()) closed.push_back(i);
  }
  // Every member is waited for up to `until` (not the connects' patience for the rest once
  // enough opened): a slow member is not a silent one.
  if (!closed.empty()) connect(closed, closed.size(), until);
  settle_ = Millis(0);  // a PING still owed holds up nothing on the way out
  const Command ping =
      std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"PING"});
  std::vector<Commands> commands(members_.size());
  size_t asked = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].conn) continue;
    commands[i] = {ping};
    ++asked;
  }
  Answers replies = exchange(
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
    out[i] = members_[i].failure.empty() ? "did not answer" : members_[i].failure;
  }
  return out;
}

Subscriber Quorum::subscribe(const std::vector<std::string>& channels,
                             const std::vector<std::string>& classic) {
  if (!classic.empty()) throw refused_on_quorum("another client's channels");
  // All at once: a member that is stopped (it accepts connections and answers nothing)
  // holds up no one once a majority confirmed.
  std::vector<ConnectOptions> each;
  for (const Member& m : members_) each.push_back(m.options);
  std::vector<std::string> failures;
  std::vector<Subscriber> subs =
      Subscriber::open_each(each, channels, majority(), std::max(kOpenPatience, 2 * slowest_open_),
                            SteadyClock::now() + options_.command_timeout, failures);
  std::vector<bool> reached(members_.size());
  size_t confirmed_or_pending = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    reached[i] = failures[i].empty();
    if (!reached[i]) members_[i].failure = failures[i];
    confirmed_or_pending += reached[i];
  }
  if (subs.empty() || confirmed_or_pending < majority()) {
    throw UnavailableError("fewer than a majority of the " + std::to_string(members_.size()) +
                           " quorum members could be subscribed to (" + describe_missing(reached) +
                           ")");
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
  joined.refill([each = std::move(each), channels, missing = std::move(missing),
                 patience = std::max(kOpenPatience, 2 * slowest_open_),
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
