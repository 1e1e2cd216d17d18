#include "redis/routed_dispatch.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "redis/errors.hpp"
#include "redis/slot.hpp"
#include "redis/topology.hpp"
#include "util/error.hpp"

namespace rlock::redis {
namespace {

// Redirects a request follows at most: a slot moves once, an ASK is followed by ASKING, a
// failover's pauses (Router::after_error) are bounded by the timeout anyway.
constexpr int kMaxRedirects = 16;
// What a write's confirmation (Router::confirm_master) has at least, also when the write
// took the request's whole budget: a sentinel on a kept connection answers in well under it.
constexpr Millis kConfirmFloor{50};

}  // namespace

RoutedDispatch::RoutedDispatch(std::unique_ptr<Router> router, ConnectOptions options,
                               bool replicated)
    : Dispatch(std::move(options)), router_(std::move(router)), replicated_(replicated) {}

std::string RoutedDispatch::server_name() {
  return router_->endpoint_for("", effective_options()).describe();
}

std::optional<std::chrono::system_clock::time_point> RoutedDispatch::server_certificate_expiry() {
  Millis timeout = request_timeout();
  return connection("", timeout, timeout).peer_certificate_expiry();
}

Connection& RoutedDispatch::connection(std::string_view key, Millis budget, Millis timeout) {
  auto opts = options_;
  opts.connect_timeout = std::min(opts.connect_timeout, budget);
  opts.command_timeout = timeout;
  Connection& c = router_->connection_for(key, opts);
  c.set_timeout(timeout);
  return c;
}

void RoutedDispatch::resend() {
  if (!resending_) ++resends_;
  resending_ = true;
}

bool RoutedDispatch::confirmed(const Connection& used, Attempts& a) {
  if (router_->confirm_master(used, std::max(a.end, SteadyClock::now() + kConfirmFloor)))
    return true;
  // The write went to a server that no longer serves the keys (a demoted master): it
  // counts for nothing, and the request goes where they are served now.
  if (a.redirects >= kMaxRedirects || SteadyClock::now() >= a.end) {
    failed_until_ = a.end;
    throw UnavailableError("redis at " + a.where +
                           " is no longer the master (the sentinels name another); no "
                           "time was left to send the request there (--timeout)");
  }
  ++a.redirects;
  resend();
  return false;
}

void RoutedDispatch::follow(std::string_view key, const ReplyError& e, Attempts& a) {
  // A redirect or a failover's refusal: the server did not run the request, so a resend is
  // not a try.
  Router::Next next = router_->after_error(key, e, a.end, effective_options(), a.redirects);
  if (next.kind == Router::Next::kThrow || a.redirects >= kMaxRedirects) throw;
  ++a.redirects;
  a.ask = next.ask;
  resend();
}

void RoutedDispatch::after_io_error(const IoError& e, Attempts& a, bool last) {
  // A connection that failed is closed at once: a request that timed out must not wait in
  // its socket for the next use.
  router_->drop_broken();
  if (last || SteadyClock::now() >= a.end) {
    failed_until_ = a.end;
    // The last try's own share of the budget would be a puzzling figure to report.
    if (a.tries > 1 && dynamic_cast<const TimeoutError*>(&e)) {
      throw TimeoutError("redis at " + a.where + " did not answer within " +
                         format_duration(std::chrono::duration_cast<Millis>(a.end - a.start)) +
                         " (--timeout; tried " + std::to_string(a.tries) + " times)");
    }
    throw;
  }
  ++a.tries;
  resend();
}

template <typename F>
auto RoutedDispatch::try_once(std::string_view key, Attempts& a, Millis left, Millis wait,
                              F& attempt) {
  const Deadline try_end = SteadyClock::now() + wait;
  Connection* used = nullptr;
  auto result = [&] {
    if (!a.ask) {
      Connection& c = connection(key, left, wait);
      // Finding the server (Sentinel's questions) came out of this try's share.
      c.set_timeout(std::max(millis_until(try_end), Millis(1)));
      used = &c;
      a.where = c.options().endpoint.describe();
      return attempt(c, false);
    }
    Connection& there = *std::exchange(a.ask, nullptr);
    used = &there;
    a.where = there.options().endpoint.describe();
    there.set_timeout(wait);
    return attempt(there, true);
  }();
  return std::make_pair(std::move(result), used);
}

template <typename F>
auto RoutedDispatch::with_retry(std::string_view key, Retry retry, std::optional<Deadline> until,
                                F&& attempt, Millis extra, bool confirm) {
  Attempts a;
  a.start = SteadyClock::now();
  a.end = until ? *until : a.start + request_timeout() + extra;
  a.where = options_.endpoint.describe();
  resending_ = false;
  for (;;) {
    const bool last = retry != Retry::kIdempotent || a.tries >= kMaxTries;
    const Millis left = std::max(millis_until(a.end), Millis(1));
    // Half of what is left: a reply stuck in a dead flow (or on a server that failed over)
    // is asked for again on a fresh connection while there is time for the answer.
    const Millis wait =
        last ? left : std::min(left, std::max((left - extra) / 2 + extra, Millis(1)));
    try {
      auto [result, used] = try_once(key, a, left, wait, attempt);
      if (confirm && !confirmed(*used, a)) continue;
      failed_until_.reset();
      return std::move(result);
    } catch (const ReplyError& e) {
      follow(key, e, a);
    } catch (const IoError& e) {
      after_io_error(e, a, last);
    } catch (const UnavailableError&) {
      failed_until_ = a.end;
      throw;
    }
  }
}

Reply RoutedDispatch::run(const Script& script, const std::vector<std::string_view>& keys,
                          const std::vector<std::string_view>& args, Retry retry,
                          std::optional<Deadline> until,
                          const std::vector<std::string_view>* resend_args) {
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

long long RoutedDispatch::replicas_online(Connection& c) {
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

Synced RoutedDispatch::run_synced(const Script& script, const std::vector<std::string_view>& keys,
                                  const std::vector<std::string_view>& args, Retry retry,
                                  std::string_view about, bool judged_by_reply,
                                  const std::vector<std::string_view>* resend_args) {
  Acks acks;
  acks.about = std::string(about);
  acks.judged_by_reply = judged_by_reply;
  if (options_.sync_replicas <= 0)
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

Reply RoutedDispatch::command(const std::vector<std::string_view>& argv, Retry retry) {
  // Every command rlock sends names its key first, if it has one.
  std::string_view key = argv.size() > 1 ? argv[1] : std::string_view();
  return Reply(with_retry(key, retry, std::nullopt, [&](Connection& c, bool asking) {
    return asking ? command_asking(c, argv) : c.command(argv);
  }));
}

std::vector<Reply> RoutedDispatch::pipeline(const std::vector<std::vector<std::string>>& commands,
                                            Retry retry, std::string_view key) {
  std::vector<Reply> out;
  // Error replies come back as replies, not thrown: a pipeline is not redirected (its
  // commands name the key's own server already, see DelayQueue::push).
  for (auto& r : with_retry(key, retry, std::nullopt,
                            [&](Connection&c, bool) { return c.pipeline(commands); })) {
    out.emplace_back(std::move(r));
  }
  return out;
}

void RoutedDispatch::send(const std::vector<std::vector<std::string>>& commands) {
  with_retry({}, Retry::kNever, std::nullopt, [&](Connection& c, bool) {
    c.send(commands);
    return 0;
  });
}

std::vector<Reply> RoutedDispatch::receive(size_t replies) {
  std::vector<Reply> out;
  for (auto& r : with_retry({}, Retry::kNever, std::nullopt,
                            [&](Connection&c, bool) { return c.receive(replies); })) {
    out.emplace_back(std::move(r));
  }
  return out;
}

Subscriber RoutedDispatch::rechecked(Subscriber sub, const Endpoint& server) {
  if (router_->recheck_every().count() > 0) {
    sub.recheck(router_->recheck_every(),
                [router = router_.get(), served = server] { return router->still_serves(served); });
  }
  return sub;
}

Subscriber RoutedDispatch::subscribe(const std::vector<std::string>& channels,
                                     const std::vector<std::string>& classic) {
  if (!router_->cluster()) return subscribe_one_tag(channels, classic);
  // A cluster delivers a channel's messages on the node of its slot only: one subscription
  // per slot, joined (a wait for any of several locks: prim::Pool).
  std::map<int, std::pair<std::vector<std::string>, std::vector<std::string>>> by_slot;
  for (const auto& c : channels) by_slot[key_slot(c)].first.push_back(c);
  for (const auto& c : classic) by_slot[key_slot(c)].second.push_back(c);
  if (by_slot.size() <= 1) return subscribe_one_tag(channels, classic);
  std::vector<Subscriber> subs;
  for (const auto& [slot, group] : by_slot)
    subs.push_back(subscribe_one_tag(group.first, group.second));
  return Subscriber::join(std::move(subs));
}

Subscriber RoutedDispatch::subscribe_one_tag(const std::vector<std::string>& channels,
                                             const std::vector<std::string>& classic) {
  // Within limit_timeout's bound where one is set (exec's watch of its hold).
  ConnectOptions opts = effective_options();
  std::string_view key = channels.empty() ? std::string_view() : channels.front();
  Deadline until = SteadyClock::now() + opts.command_timeout;
  for (int round = 0;; ++round) {
    opts.endpoint = router_->endpoint_for(key, effective_options());
    try {
      return rechecked(
          Subscriber::open(opts, channels, !router_->cluster(), router_->cluster(), classic),
          opts.endpoint);
    } catch (const ReplyError& e) {
      // MOVED: the slot's owner changed since the last request.
      Router::Next next = router_->after_error(key, e, until, options_, round);
      if (next.kind != Router::Next::kResend || round >= kMaxRedirects) throw;
    }
  }
}

std::optional<Subscriber> RoutedDispatch::subscribe_pattern(const std::string& pattern) {
  if (router_->cluster()) return std::nullopt;
  ConnectOptions opts = options_;
  opts.endpoint = router_->endpoint_for("", effective_options());
  return rechecked(Subscriber::open_pattern(opts, pattern), opts.endpoint);
}

void RoutedDispatch::for_each_master(Topology& self, const std::function<void(Topology&)>& fn) {
  std::vector<Endpoint> masters = router_->masters(effective_options());
  if (!router_->cluster()) return fn(self);
  for (const Endpoint& ep : masters) {
    ConnectOptions opts = options_;
    opts.endpoint = ep;
    Topology node(opts);
    fn(node);
  }
}

bool RoutedDispatch::send_cleanup(const Script& script, const std::vector<std::string>& keys,
                                  const std::vector<std::string>& args, Millis patience) noexcept {
  // AUTH, SELECT and EVAL go out in one write, without waiting for any reply in between: a
  // stalled server accepts the connection and the bytes, and runs all three when it resumes.
  // The server is the one the last request for these keys went to (no round trip to find
  // it: this runs when a server may be stalled).
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
