#include "redis/topology.hpp"

#include <algorithm>
#include <utility>

#include "redis/errors.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// Redirects a request follows at most: a slot moves once, an ASK is followed by ASKING, a
// failover's pauses (Router::after_error) are bounded by the timeout anyway.
constexpr int kMaxRedirects = 16;
// What a write's confirmation (Router::confirm_master) has at least, also when the write
// took the request's whole budget: a sentinel on a kept connection answers in well under it.
constexpr Millis kConfirmFloor{50};

// A quorum's first member as a standalone server: where requests without a majority rule
// would go (server_name, the TLS certificate), never a lock's.
Target member_target(const Target& quorum) {
  Target t;
  t.endpoint = quorum.endpoint.at(quorum.seeds.front().host, quorum.seeds.front().port);
  t.tls = quorum.tls;
  return t;
}

}  // namespace

Topology::Topology(ConnectOptions options)
    : Topology(Target{Deployment::kStandalone, options.endpoint, {}, {}, {}, {}}, options) {}

Topology::Topology(const Target& target, ConnectOptions options,
                   std::function<void(const std::string&)> notice)
    : options_(std::move(options)),
      target_(target),
      router_(make_router(target.kind == Deployment::kQuorum ? member_target(target) : target,
                          std::move(notice))),
      replicated_(target.kind == Deployment::kSentinel || target.kind == Deployment::kCluster) {
  if (target.kind != Deployment::kQuorum) return;
  if (options_.sync_replicas > 0) {
    throw UsageError(
        "--sync-replicas has no meaning on a quorum (redis-quorum://): its members are "
        "independent masters and a hold is a majority of them");
  }
  quorum_ = std::make_unique<Quorum>(target, options_);
}

std::vector<Endpoint> Topology::quorum_members() const {
  return quorum_ ? quorum_->members() : std::vector<Endpoint>{};
}

std::vector<std::string> Topology::silent_quorum_members() {
  if (!quorum_) return {};
  return quorum_->silent_members(SteadyClock::now() + request_timeout());
}

bool Topology::replicated() const { return replicated_ || router_->cluster(); }

std::string Topology::server_name() {
  return router_->endpoint_for("", effective_options()).describe();
}

std::optional<std::chrono::system_clock::time_point> Topology::server_certificate_expiry() {
  Millis timeout = request_timeout();
  return connection("", timeout, timeout).peer_certificate_expiry();
}

Topology::Sentinels Topology::sentinels() const {
  Sentinels out;
  if (target_.kind != Deployment::kSentinel) return out;
  out.master_name = target_.master_name;
  for (const Endpoint& sentinel : target_.seeds) {
    // As SentinelResolver reaches them: their own credentials, no database.
    ConnectOptions o = effective_options();
    o.endpoint = sentinel;
    o.endpoint.user = target_.sentinel_user;
    o.endpoint.password = target_.sentinel_password;
    o.endpoint.db = 0;
    out.each.push_back(std::move(o));
  }
  return out;
}

Topology::~Topology() = default;

Millis Topology::request_timeout() const {
  return timeout_limit_.count() > 0 ? std::min(timeout_limit_, options_.command_timeout)
                                    : options_.command_timeout;
}

ConnectOptions Topology::effective_options() const {
  auto opts = options_;
  opts.command_timeout = request_timeout();
  opts.connect_timeout = std::min(opts.connect_timeout, opts.command_timeout);
  return opts;
}

Connection& Topology::connection(std::string_view key, Millis budget, Millis timeout) {
  auto opts = options_;
  opts.connect_timeout = std::min(opts.connect_timeout, budget);
  opts.command_timeout = timeout;
  Connection& c = router_->connection_for(key, opts);
  c.set_timeout(timeout);
  return c;
}

template <typename F>
auto Topology::with_retry(std::string_view key, Retry retry, std::optional<Deadline> until,
                          F&& attempt, Millis extra, bool confirm) {
  Deadline start = SteadyClock::now();
  Deadline end = until ? *until : start + request_timeout() + extra;
  Connection* ask = nullptr;
  int redirects = 0;
  resending_ = false;
  // The server that did not answer (a cluster node, the master Sentinel named), not the
  // URL's first host.
  std::string where = options_.endpoint.describe();
  // From here on the request goes out on another connection than its first send: it is
  // judged as a reconnected request (see resend_args in run()).
  auto resend = [this] {
    if (!resending_) ++resends_;
    resending_ = true;
  };
  for (int tries = 1;;) {
    bool last = retry != Retry::kIdempotent || tries >= kMaxTries;
    Millis left = std::max(millis_until(end), Millis(1));
    // Half of what is left: a reply stuck in a dead flow (or on a server that failed over)
    // is asked for again on a fresh connection while there is time for the answer.
    Millis wait = last ? left : std::min(left, std::max((left - extra) / 2 + extra, Millis(1)));
    Deadline try_end = SteadyClock::now() + wait;
    try {
      Connection* used = nullptr;
      auto result = [&] {
        if (!ask) {
          Connection& c = connection(key, left, wait);
          // Finding the server (Sentinel's questions) came out of this try's share.
          c.set_timeout(std::max(millis_until(try_end), Millis(1)));
          used = &c;
          where = c.options().endpoint.describe();
          return attempt(c, false);
        }
        Connection& there = *std::exchange(ask, nullptr);
        used = &there;
        where = there.options().endpoint.describe();
        there.set_timeout(wait);
        return attempt(there, true);
      }();
      if (confirm &&
          !router_->confirm_master(*used, std::max(end, SteadyClock::now() + kConfirmFloor))) {
        // The write went to a server that no longer serves the keys (a demoted master):
        // it counts for nothing, and the request goes where they are served now.
        if (redirects >= kMaxRedirects || SteadyClock::now() >= end) {
          failed_until_ = end;
          throw UnavailableError("redis at " + where +
                                 " is no longer the master (the sentinels name another); no "
                                 "time was left to send the request there (--timeout)");
        }
        ++redirects;
        resend();
        continue;
      }
      failed_until_.reset();
      return result;
    } catch (const ReplyError& e) {
      // A redirect or a failover's refusal: the server did not run the request, so a
      // resend is not a try.
      auto opts = effective_options();
      Router::Next next = router_->after_error(key, e, end, opts, redirects);
      if (next.kind == Router::Next::kThrow || redirects >= kMaxRedirects) throw;
      ++redirects;
      ask = next.ask;
      resend();
    } catch (const IoError& e) {
      // A connection that failed is closed at once: a request that timed out must not
      // wait in its socket for the next use.
      router_->drop_broken();
      if (last || SteadyClock::now() >= end) {
        failed_until_ = end;
        // The last try's own share of the budget would be a puzzling figure to report.
        if (tries > 1 && dynamic_cast<const TimeoutError*>(&e)) {
          throw TimeoutError("redis at " + where + " did not answer within " +
                             format_duration(std::chrono::duration_cast<Millis>(end - start)) +
                             " (--timeout; tried " + std::to_string(tries) + " times)");
        }
        throw;
      }
      ++tries;
      resend();
    } catch (const UnavailableError&) {
      failed_until_ = end;
      throw;
    }
  }
}

Deadline Topology::cleanup_until() const {
  return failed_until_ ? *failed_until_ : SteadyClock::now() + request_timeout();
}

void Topology::retire(Subscriber subscriber) { retired_.push_back(std::move(subscriber)); }

void Topology::close_retired() { retired_.clear(); }

void Topology::limit_timeout(Millis timeout) { timeout_limit_ = timeout; }

Reply Topology::run(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry,
                    std::optional<Deadline> until,
                    const std::vector<std::string_view>* resend_args) {
  if (quorum_) {
    Deadline end = until ? *until : SteadyClock::now() + request_timeout();
    try {
      Reply r = quorum_->run(script, keys, args, end, retry);
      failed_until_.reset();
      return r;
    } catch (const UnavailableError&) {
      failed_until_ = end;
      throw;
    }
  }
  std::string_view key = keys.empty() ? std::string_view() : keys.front();
  return Reply(with_retry(
      key, retry, until,
      [&](Connection& c, bool asking) {
        const auto& sent = resending_ && resend_args ? *resend_args : args;
        if (asking) return run_script(c, script, keys, sent, {}, true);
        return run_script(c, script, keys, sent, std::exchange(in_flight_, {}));
      },
      Millis(0), true));
}

std::string Acks::describe() const {
  std::string of = connected >= 0 ? std::to_string(acked) + " of " + std::to_string(connected) +
                                        " connected replicas"
                                  : std::to_string(acked) + " replicas";
  std::string line = of + " of redis at " + master + " acknowledged within " +
                     format_duration(within) + " (--sync-replicas " + std::to_string(wanted) + ")";
  if (!wait_error.empty()) line += ": WAIT failed: " + wait_error;
  return line;
}

long long Topology::replicas_online(Connection& c) {
  if (c.known_replicas() == -1) {
    // Unknown (-2): ROLE refused (an ACL, a managed service), or the server is no master (a
    // cluster seed that is a replica answers the script with MOVED, never takes the write).
    long long online = -2;
    try {
      ReplyPtr role = c.command({"ROLE"});
      if (as_string(element(role.get(), 0)) == "master" && role->elements > 2) {
        online = static_cast<long long>(element(role.get(), 2)->elements);
      }
    } catch (const ReplyError&) {
    }
    c.set_known_replicas(static_cast<int>(online));
  }
  return c.known_replicas();
}

Synced Topology::run_synced(const Script& script, const std::vector<std::string_view>& keys,
                            const std::vector<std::string_view>& args, Retry retry,
                            std::string_view about, bool judged_by_reply,
                            const std::vector<std::string_view>* resend_args) {
  Acks acks;
  acks.about = std::string(about);
  acks.judged_by_reply = judged_by_reply;
  if (options_.sync_replicas <= 0 || quorum_)
    return {run(script, keys, args, retry, std::nullopt, resend_args), acks};
  std::string_view key = keys.empty() ? std::string_view() : keys.front();
  acks.wanted = options_.sync_replicas;
  // Near a renewal's stopping point (limit_timeout) the WAIT shares the bounded time.
  Millis extra = timeout_limit_.count() > 0 ? Millis(0) : options_.sync_timeout;
  ReplyPtr reply = with_retry(
      key, retry, std::nullopt,
      [&](Connection& c, bool asking) {
        acks.master = c.options().endpoint.describe();
        // Too few last time: ask again (a replica may be back), not only once per connection.
        if (c.known_replicas() >= 0 && c.known_replicas() < acks.wanted) c.set_known_replicas(-1);
        acks.connected = replicas_online(c);
        if (acks.connected >= 0 && acks.connected < acks.wanted && !judged_by_reply) {
          throw ReplicationError((about.empty() ? "" : std::string(about) + ": ") + "redis at " +
                                 acks.master + " has " + std::to_string(acks.connected) +
                                 " connected replicas, fewer than --sync-replicas " +
                                 std::to_string(acks.wanted) + "; nothing was written");
        }
        // The WAIT answers before the socket gives up on it.
        acks.within = std::max(std::min(options_.sync_timeout, c.timeout() * 3 / 4), Millis(1));
        auto in_flight = asking ? std::function<void()>() : std::exchange(in_flight_, {});
        const auto& sent = resending_ && resend_args ? *resend_args : args;
        AckedReply r =
            run_script_acked(c, script, keys, sent, acks.wanted, acks.within, in_flight, asking);
        acks.acked = r.acked;
        acks.wait_error = r.wait_error;
        if (acks.short_of_wanted()) {
          // The figure for the message, as it is now (a replica may have gone).
          c.set_known_replicas(-1);
          try {
            acks.connected = replicas_online(c);
          } catch (const Error&) {
          }
        }
        return std::move(r.reply);
      },
      extra, true);
  if (acks.connected < 0) acks.connected = -1;
  return {Reply(std::move(reply)), acks};
}

Reply Topology::command(const std::vector<std::string_view>& argv, Retry retry) {
  if (quorum_) throw refused_on_quorum(argv.empty() ? "a command" : std::string(argv.front()));
  // Every command rlock sends names its key first, if it has one.
  std::string_view key = argv.size() > 1 ? argv[1] : std::string_view();
  return Reply(with_retry(key, retry, std::nullopt, [&](Connection& c, bool asking) {
    return asking ? command_asking(c, argv) : c.command(argv);
  }));
}

std::vector<Reply> Topology::pipeline(const std::vector<std::vector<std::string>>& commands,
                                      Retry retry, std::string_view key) {
  if (quorum_) throw refused_on_quorum("a pipeline");
  std::vector<Reply> out;
  // Error replies come back as replies, not thrown: a pipeline is not redirected (its
  // commands name the key's own server already, see DelayQueue::push).
  for (auto& r : with_retry(key, retry, std::nullopt,
                            [&](Connection&c, bool) { return c.pipeline(commands); })) {
    out.emplace_back(std::move(r));
  }
  return out;
}

void Topology::send(const std::vector<std::vector<std::string>>& commands) {
  if (quorum_) throw refused_on_quorum("a pipeline");
  with_retry({}, Retry::kNever, std::nullopt, [&](Connection& c, bool) {
    c.send(commands);
    return 0;
  });
}

std::vector<Reply> Topology::receive(size_t replies) {
  std::vector<Reply> out;
  for (auto& r : with_retry({}, Retry::kNever, std::nullopt,
                            [&](Connection&c, bool) { return c.receive(replies); })) {
    out.emplace_back(std::move(r));
  }
  return out;
}

Subscriber Topology::subscribe(const std::vector<std::string>& channels,
                               const std::vector<std::string>& classic) {
  if (quorum_) return quorum_->subscribe(channels, classic);
  ConnectOptions opts = options_;
  std::string_view key = channels.empty() ? std::string_view() : channels.front();
  Deadline until = SteadyClock::now() + opts.command_timeout;
  for (int round = 0;; ++round) {
    opts.endpoint = router_->endpoint_for(key, options_);
    try {
      Subscriber sub =
          Subscriber::open(opts, channels, !router_->cluster(), router_->cluster(), classic);
      if (router_->recheck_every().count() > 0) {
        sub.recheck(router_->recheck_every(), [router = router_.get(), served = opts.endpoint] {
          return router->still_serves(served);
        });
      }
      return sub;
    } catch (const ReplyError& e) {
      // MOVED: the slot's owner changed since the last request.
      Router::Next next = router_->after_error(key, e, until, options_, round);
      if (next.kind != Router::Next::kResend || round >= kMaxRedirects) throw;
    }
  }
}

std::optional<Subscriber> Topology::subscribe_pattern(const std::string& pattern) {
  if (router_->cluster() || quorum_) return std::nullopt;
  ConnectOptions opts = options_;
  opts.endpoint = router_->endpoint_for("", effective_options());
  Subscriber sub = Subscriber::open_pattern(opts, pattern);
  if (router_->recheck_every().count() > 0) {
    sub.recheck(router_->recheck_every(), [router = router_.get(), served = opts.endpoint] {
      return router->still_serves(served);
    });
  }
  return sub;
}

void Topology::for_each_master(const std::function<void(Topology&)>& fn) {
  if (quorum_) {
    for (auto& member : quorum_->member_topologies()) fn(*member);
    return;
  }
  std::vector<Endpoint> masters = router_->masters(effective_options());
  if (!router_->cluster()) return fn(*this);
  for (const Endpoint& ep : masters) {
    ConnectOptions opts = options_;
    opts.endpoint = ep;
    Topology node(opts);
    fn(node);
  }
}

bool Topology::send_cleanup(const Script& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args, Millis patience) noexcept {
  // AUTH, SELECT and EVAL go out in one write, without waiting for any reply in between: a
  // stalled server accepts the connection and the bytes, and runs all three when it resumes.
  // The server is the one the last request for these keys went to (no round trip to find
  // it: this runs when a server may be stalled).
  if (quorum_) return quorum_->send_cleanup(script, keys, args, patience);
  std::string_view key = keys.empty() ? std::string_view() : keys.front();
  Endpoint ep;
  try {
    auto known = router_->known_endpoint_for(key);
    ep = known ? *known : router_->endpoint_for(key, options_);
  } catch (const Error&) {
    return false;
  }
  ConnectOptions opts = options_;
  opts.endpoint = ep;
  opts.connect_timeout = std::min(options_.connect_timeout, std::max(patience, kCleanupMargin));
  std::vector<std::vector<std::string>> commands;
  if (!ep.password.empty()) {
    commands.push_back(ep.user.empty() ? std::vector<std::string>{"AUTH", ep.password}
                                       : std::vector<std::string>{"AUTH", ep.user, ep.password});
  }
  // The database is chosen inside the script: a SELECT the server refuses in the same
  // write would leave the script to run in database 0, while one inside it ends the script
  // before it writes anything.
  std::string source = ep.db == 0 ? std::string(script.source)
                                  : "redis.call('SELECT', '" + std::to_string(ep.db) + "')\n" +
                                        std::string(script.source);
  std::vector<std::string> eval = {"EVAL", std::move(source), std::to_string(keys.size())};
  eval.insert(eval.end(), keys.begin(), keys.end());
  eval.insert(eval.end(), args.begin(), args.end());
  commands.push_back(std::move(eval));
  std::optional<Connection> conn;
  try {
    // Over TLS the handshake needs the server's answer: a stalled server gets no clean-up.
    conn.emplace(Connection::open_unauthenticated(opts));
    conn->set_timeout(std::max(patience, Millis(1)));
    conn->send(commands);
  } catch (...) {
    return false;
  }
  // The replies are a courtesy: what matters is that the request is in the server's hands.
  // One deadline for all of them, however slowly they come.
  try {
    conn->receive(commands.size());
  } catch (...) {
  }
  return true;
}

}  // namespace rlock::redis
