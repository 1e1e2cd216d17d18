// One exchange of a quorum's requests and replies with its members (QuorumMembers).
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cerrno>

#include "redis/errors.hpp"
#include "redis/quorum_members.hpp"
#include "redis/wait_interrupt.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

bool noscript(const std::vector<ReplyPtr>& replies) {
  return std::any_of(replies.begin(), replies.end(), [](const ReplyPtr& r) {
    return is_error(r.get()) && first_word(r.get()) == "NOSCRIPT";
  });
}

}  // namespace

// One exchange: what each member was sent, has answered and is owed, and when it gets its
// commands again.
class QuorumMembers::Round {
 public:
  Round(QuorumMembers& q, const std::vector<Commands>& commands, Deadline until, Retry retry)
      : q_(q),
        commands_(commands),
        until_(until),
        retry_(retry),
        n_(q.members_.size()),
        first_sent_(n_),
        out_(n_),
        got_(n_),
        pending_(n_, false),
        sourced_(n_, false),
        tries_(n_, 0),
        resend_at_(n_, until) {}

  // Every request is written before any reply is read: the members work at once.
  void send_all() {
    for (size_t i = 0; i < n_; ++i) {
      if (commands_[i].empty() || !q_.members_[i].conn) continue;
      try {
        send(i);
      } catch (const Error& e) {
        fail(i, e.what());
      }
    }
  }

  // Reads until every member answered, `until`, or `enough` says the outcome is known.
  void read_all(const Enough& enough) {
    std::optional<Deadline> decide_by;  // enough's: when to stop waiting for the others
    while (true) {
      bool answered = false;
      for (size_t i = 0; i < n_; ++i) {
        if (pending_[i]) answered = read(i) || answered;
      }
      if (answered && enough) decide_by = enough(out_);
      if (decide_by && SteadyClock::now() >= *decide_by) return;
      if (!wait(decide_by)) return;
    }
  }

  // Members that lost their scripts (a new deployment, a restart) answer NOSCRIPT, and one
  // that answers after the majority did would never run the request: a long-lived
  // process (exec) asks next only at its renewal. When a member said so, the others' late
  // replies are waited for a short while now, and a NOSCRIPT among them answered. A grant
  // is no exception then: the members that had not answered most likely lost the scripts
  // too (a deployment, every member restarted), and one left holding nothing would be
  // taken by the next waiter while the holder it reported has only a bare majority.
  Answers finish() {
    if (noscript_seen_) {
      for (size_t i = 0; i < n_; ++i) {
        if (!pending_[i]) continue;
        for (Sent& s : q_.members_[i].in_flight) {
          if (s.round == q_.round_) s.settle = std::max(s.settle, kDrainPatience);
        }
      }
      q_.drain();
    }
    return std::move(out_);
  }

 private:
  void send(size_t i) {
    Member& m = q_.members_[i];
    ++tries_[i];
    const bool last = retry_ != Retry::kIdempotent || tries_[i] >= kMaxTries;
    const Millis left = std::max(millis_until(until_), Millis(1));
    // When a member that has not answered gets the request again on a fresh connection (as
    // Topology::run does on one server): half of what is left, the last try all of it.
    resend_at_[i] = last ? until_ : SteadyClock::now() + std::max(left / 2, Millis(1));
    m.conn->set_timeout(left);
    got_[i].clear();
    // A lease the member reports to a repeat began at the latest when the repeat was
    // sent: counted from the first send, that much more of it is left.
    const Deadline now = SteadyClock::now();
    if (tries_[i] == 1) first_sent_[i] = now;
    q_.repeated_after_[i] = std::chrono::duration_cast<Millis>(now - first_sent_[i]);
    q_.write(m, commands_[i], sourced_[i]);
    pending_[i] = true;
  }

  // A member whose connection failed under the request, or that has not answered by its
  // resend time: the request again on a fresh connection while tries and time are left (an
  // idempotent request: a repeat of one that ran reports what it did), else no answer.
  void fail(size_t i, const std::string& why) {
    Member& m = q_.members_[i];
    q_.drop(m, why);
    pending_[i] = false;
    while (retry_ == Retry::kIdempotent && tries_[i] < kMaxTries && SteadyClock::now() < until_) {
      q_.connect({i}, 1, until_);
      if (!m.conn) return;
      try {
        send(i);
        return;
      } catch (const Error& e) {
        q_.drop(m, e.what());
        pending_[i] = false;
      }
    }
  }

  // Takes the replies member i has buffered; true once it answered the whole request.
  bool read(size_t i) {
    Member& m = q_.members_[i];
    try {
      while (ReplyPtr r = m.conn->buffered_reply("from a quorum member")) {
        Sent sent = std::move(m.in_flight.front());
        m.in_flight.pop_front();
        if (q_.settle_late(m, sent, r.get())) continue;
        got_[i].push_back(std::move(r));
        if (got_[i].size() < commands_[i].size()) continue;
        if (!sourced_[i] && noscript(got_[i])) {
          // A member that has not cached a script (restarted, SCRIPT FLUSH) ran nothing
          // of it: the same requests again with their sources, on the same connection.
          q_.write(m, commands_[i], true);
          sourced_[i] = true;
          noscript_seen_ = true;
          got_[i].clear();
          continue;
        }
        out_[i] = std::move(got_[i]);
        pending_[i] = false;
        return true;
      }
    } catch (const Error& e) {
      fail(i, e.what());
    }
    return false;
  }

  // Waits for the members still owing until `decide_by`, `until` or a resend time, and
  // reads or resends; false once there is nothing left to wait for.
  bool wait(std::optional<Deadline> decide_by) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    Deadline wake = decide_by ? std::min(until_, *decide_by) : until_;
    for (size_t i = 0; i < n_; ++i) {
      if (!pending_[i]) continue;
      fds.push_back({q_.members_[i].conn->fd(), POLLIN, 0});
      which.push_back(i);
      wake = std::min(wake, resend_at_[i]);
    }
    if (fds.empty()) return false;
    if (millis_until(until_).count() <= 0) {
      for (size_t i : which) {
        q_.members_[i].failure =
            "did not answer within " + format_duration(q_.timeout_) + " (--timeout)";
      }
      return false;
    }
    const int cut = WaitInterrupt::fd();
    if (cut >= 0) fds.push_back({cut, POLLIN, 0});
    int rc = poll(fds.data(), fds.size(), poll_ms(std::max(millis_until(wake), Millis(0))));
    if (rc < 0 && errno != EINTR) return false;
    // (The replies still owed are skipped by the next exchange, as after a timeout.)
    if (rc > 0 && cut >= 0 && fds.back().revents)
      throw InterruptedError("the wait for the quorum members was cut short");
    for (size_t k = 0; k < which.size(); ++k) {
      const size_t i = which[k];
      try {
        if (rc > 0 && fds[k].revents) {
          q_.members_[i].conn->read_available("from a quorum member");
        } else if (SteadyClock::now() >= resend_at_[i] && resend_at_[i] < until_) {
          fail(i, "did not answer within half of what was left of --timeout");
        }
      } catch (const Error& e) {
        fail(i, e.what());
      }
    }
    return true;
  }

  QuorumMembers& q_;
  const std::vector<Commands>& commands_;
  const Deadline until_;
  const Retry retry_;
  const size_t n_;
  std::vector<Deadline> first_sent_;
  Answers out_;
  std::vector<std::vector<ReplyPtr>> got_;
  std::vector<bool> pending_;
  std::vector<bool> sourced_;  // sent again with EVAL after a NOSCRIPT
  std::vector<int> tries_;
  std::vector<Deadline> resend_at_;
  bool noscript_seen_ = false;
};

Answers QuorumMembers::exchange(const std::vector<Commands>& commands, Deadline until,
                                const Enough& enough, Retry retry) {
  ++round_;
  repeated_after_.assign(members_.size(), Millis(0));
  Round round(*this, commands, until, retry);
  round.send_all();
  round.read_all(enough);
  return round.finish();
}

std::vector<QuorumMembers::Commands> QuorumMembers::for_members(const Command& command,
                                                                const std::vector<bool>& to) const {
  std::vector<Commands> commands(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].conn && to[i]) commands[i].push_back(command);
  }
  return commands;
}

void QuorumMembers::write_only(const Script& script, const std::vector<std::string_view>& keys,
                               const std::vector<std::string_view>& args,
                               const std::vector<bool>& to, Millis settle) {
  settle_ = settle;
  const std::vector<Commands> commands = for_members(eval(script, keys, args), to);
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!commands[i].empty()) write_or_drop(i, commands[i]);
  }
}

Answers QuorumMembers::exchange(const Script& script, const std::vector<std::string_view>& keys,
                                const std::vector<std::string_view>& args,
                                const std::vector<bool>& to, Deadline until,
                                const std::function<bool(const Answers&)>& enough, Millis settle) {
  settle_ = settle;
  return exchange(
      for_members(eval(script, keys, args), to), until,
      [&](const Answers& r) -> std::optional<Deadline> {
        if (enough(r)) return SteadyClock::now();
        return std::nullopt;
      },
      Retry::kIdempotent);
}

}  // namespace rlock::redis
