#include "redis/quorum_members.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cerrno>

#include "redis/errors.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

Millis since(Deadline start) {
  return std::chrono::duration_cast<Millis>(SteadyClock::now() - start);
}

bool is_evalsha(const std::vector<std::string>& cmd) {
  return cmd.size() > 1 && cmd[0] == "EVALSHA";
}

}  // namespace

bool QuorumMembers::is_noscript(const redisReply* r) {
  return is_error(r) && first_word(r) == "NOSCRIPT";
}

int QuorumMembers::poll_ms(Millis left) {
  return static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

QuorumMembers::QuorumMembers(const Target& target, const ConnectOptions& options)
    : timeout_(options.command_timeout) {
  for (const Endpoint& seed : target.seeds) {
    Member m;
    m.options = options;
    m.options.endpoint = target.endpoint.at(seed.host, seed.port);
    endpoints_.push_back(m.options.endpoint);
    members_.push_back(std::move(m));
  }
}

QuorumMembers::~QuorumMembers() { drain(); }

std::vector<ConnectOptions> QuorumMembers::each_options() const {
  std::vector<ConnectOptions> each;
  for (const Member& m : members_) each.push_back(m.options);
  return each;
}

QuorumMembers::Command QuorumMembers::eval(const Script& script,
                                           const std::vector<std::string_view>& keys,
                                           const std::vector<std::string_view>& args) {
  sources_[script.sha1] = script.source;
  std::vector<std::string> cmd = {"EVALSHA", script.sha1, std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return std::make_shared<const std::vector<std::string>>(std::move(cmd));
}

QuorumMembers::Commands QuorumMembers::sources_for(Member& m, const Commands& commands, bool all) {
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

void QuorumMembers::reopen(Deadline until, bool all) {
  std::vector<size_t> closed;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].conn || members_[i].conn->broken()) closed.push_back(i);
  }
  if (closed.empty()) return;
  const size_t open = members_.size() - closed.size();
  connect(closed, all ? closed.size() : open < majority() ? majority() - open : 0, until);
}

void QuorumMembers::connect(const std::vector<size_t>& which, size_t needed, Deadline until) {
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

std::vector<size_t> QuorumMembers::send_logins(const std::vector<size_t>& which,
                                               std::vector<size_t>& owed, size_t& done) {
  std::vector<size_t> waiting;
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
  return waiting;
}

std::vector<size_t> QuorumMembers::read_logins(const std::vector<size_t>& waiting,
                                               std::vector<size_t>& owed, size_t& done) {
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
  return still;
}

void QuorumMembers::log_in(const std::vector<size_t>& which, size_t needed, Deadline until) {
  std::vector<size_t> owed(members_.size(), 0);
  size_t done = 0;
  std::vector<size_t> waiting = send_logins(which, owed, done);
  const Deadline start = SteadyClock::now();
  std::optional<Deadline> others_until;
  while (!waiting.empty()) {
    waiting = read_logins(waiting, owed, done);
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
    if (poll(fds.data(), fds.size(), poll_ms(left)) < 0 && errno != EINTR) break;
    read_ready(fds, waiting);
  }
}

void QuorumMembers::read_ready(const std::vector<pollfd>& fds, const std::vector<size_t>& which) {
  for (size_t k = 0; k < fds.size(); ++k) {
    if (!fds[k].revents) continue;
    try {
      members_[which[k]].conn->read_available("from a quorum member");
    } catch (const Error& e) {
      drop(members_[which[k]], e.what());
    }
  }
}

void QuorumMembers::drop(Member& m, const std::string& why) {
  m.failure = why;
  m.conn.reset();
  m.in_flight.clear();
  m.cached.clear();
}

void QuorumMembers::send_commands(Member& m, const Commands& commands) {
  std::vector<std::vector<std::string_view>> views;
  views.reserve(commands.size());
  for (const Command& cmd : commands) views.emplace_back(cmd->begin(), cmd->end());
  m.conn->send(views);
}

void QuorumMembers::write(Member& m, const Commands& request, bool sourced) {
  const Commands sent = sources_for(m, request, sourced);
  send_commands(m, sent);
  for (const Command& cmd : sent) m.in_flight.push_back({cmd, round_, settle_});
}

void QuorumMembers::write_or_drop(size_t i, const Commands& request) {
  try {
    write(members_[i], request);
  } catch (const Error& e) {
    drop(members_[i], e.what());
  }
}

bool QuorumMembers::settle_late(Member& m, const Sent& sent, const redisReply* r) {
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

Millis QuorumMembers::owed_patience(const Member& m) {
  Millis most{0};
  for (const Sent& s : m.in_flight) most = std::max(most, s.settle);
  return most;
}

void QuorumMembers::drain() noexcept {
  ++round_;  // every reply still owed is a late one now
  const Deadline start = SteadyClock::now();
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
      if (!m.conn || owed_patience(m).count() == 0) continue;  // a late grant is not even read
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
      const Millis owed = owed_patience(m);
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

std::string QuorumMembers::describe_missing(const std::vector<bool>& ok) const {
  std::string out;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (ok[i]) continue;
    out += (out.empty() ? "" : "; ") + endpoints_[i].describe();
    if (!members_[i].failure.empty()) out += ": " + members_[i].failure;
  }
  return out;
}

}  // namespace rlock::redis
