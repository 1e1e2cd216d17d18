#include <poll.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "cli/lock_options.hpp"
#include "cli/supervised.hpp"
#include "cli/whole_flag.hpp"
#include "exec/signals.hpp"
#include "prim/limiter.hpp"
#include "prim/redisson_limiter.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

// Bounds that keep the Lua arithmetic (doubles, microseconds) exact enough.
constexpr long long kMaxRate = 1'000'000'000;

struct LimitFlags {
  std::string name;
  std::string rate, per, burst = "1", cost = "1", wait;
  std::optional<std::string> client, client_rate;  // given, maybe empty
  bool peek = false, reconfigure = false, fail_open = false, reset = false;
  int conflict_exit_code = kExitNotNow;
  std::vector<const CLI::Option*> decision_options;  // what --reset takes none of
};

// A period as a user would type it: the largest unit that divides it (1h, 90s, 250ms).
std::string format_period(long long ms) {
  for (auto [unit, len] :
       {std::pair{"d", 86'400'000LL}, {"h", 3'600'000LL}, {"m", 60'000LL}, {"s", 1'000LL}}) {
    if (ms % len == 0) return std::to_string(ms / len) + unit;
  }
  return std::to_string(ms) + "ms";
}

// "--rate 10 --per 1s --burst 1 --client --client-rate 2" as a user would type it; a
// Redisson RRateLimiter has no burst (--layout redisson).
std::string describe(const prim::LimiterConfig& c, bool redisson) {
  std::string s = "--rate " + std::to_string(c.rate) + " --per " + format_period(c.per_ms);
  if (!redisson) s += " --burst " + std::to_string(c.burst);
  if (c.per_client) s += " --client";
  if (c.client_rate > 0) s += " --client-rate " + std::to_string(c.client_rate);
  return s;
}

struct Call {
  prim::LimitRequest request;
  Millis wait{0};
  bool redisson = false;  // Redisson's RRateLimiter (--layout redisson)
};

bool given(const LimitFlags& f, const std::string& flag) {
  for (const auto* o : f.decision_options)
    if (o->get_name() == flag) return o->count() > 0;
  return false;
}

// Under --layout redisson, the name and object: Redisson's RRateLimiter of a brace-less name.
void check_redisson_name(const LimitFlags& f, const Settings& s) {
  prim::RedissonLayout(s.prefix).check_name(f.name);
  if (s.redisson_object != RedissonObject::kDefault)
    throw UsageError(
        "--redisson-object names a lock or semaphore; limit is Redisson's "
        "RRateLimiter under --layout redisson (leave --redisson-object out)");
}

// Under --layout redisson: what Redisson's RRateLimiter has no form for is refused, and its
// window passes up to --rate at once (the burst is the rate).
void redisson_call(const LimitFlags& f, const Settings& s, Call& c) {
  check_redisson_name(f, s);
  if (given(f, "--burst"))
    throw UsageError(
        "--burst: Redisson's RRateLimiter has none (any --per window passes up to "
        "--rate); leave it out under --layout redisson");
  if (f.client_rate)
    throw UsageError(
        "--client-rate: Redisson's RRateLimiter limits each client (PER_CLIENT, "
        "--client ID) or all of them (OVERALL), not both");
  prim::LimiterConfig& cfg = c.request.config;
  if (c.request.cost > cfg.rate)
    throw UsageError("--cost " + f.cost + " is above --rate " + std::to_string(cfg.rate) +
                     ": Redisson's RRateLimiter refuses such a call");
  cfg.burst = cfg.rate;
  c.redisson = true;
}

Call resolve_call(const LimitFlags& f, const Settings& s) {
  validate_name(f.name);
  if (f.rate.empty() || f.per.empty()) {
    throw UsageError("limit needs --rate N and --per DUR (or --reset); see: rlock help limit");
  }
  Call c;
  prim::LimiterConfig& cfg = c.request.config;
  cfg.rate = parse_whole_flag(f.rate, "--rate", 1, kMaxRate);
  cfg.per_ms = parse_duration(f.per, "--per").count();
  if (cfg.per_ms < 1) throw UsageError("--per must be at least 1ms, not '" + f.per + "'");
  cfg.burst = parse_whole_flag(f.burst, "--burst", 1, kMaxRate);
  if (f.client_rate && !f.client)
    throw UsageError("--client-rate needs --client ID (the client it limits)");
  if (f.client) validate_client_id(*f.client);
  cfg.per_client = f.client.has_value();
  if (f.client_rate)
    cfg.client_rate = parse_whole_flag(*f.client_rate, "--client-rate", 1, kMaxRate);
  // A bucket refills fully in per*burst/rate: bounded like every other duration.
  long long slowest = cfg.client_rate > 0 ? std::min(cfg.rate, cfg.client_rate) : cfg.rate;
  if (static_cast<long double>(cfg.per_ms) * cfg.burst / slowest > kMaxDuration.count()) {
    throw UsageError("--per x --burst / rate must be at most 36500d (the time to refill a burst)");
  }
  c.request.cost = parse_whole_flag(f.cost, "--cost", 1, kMaxRate);
  if (s.layout == Layout::kRedisson) redisson_call(f, s, c);
  if (c.request.cost > cfg.burst) {
    throw UsageError("--cost " + f.cost + " is above --burst " + std::to_string(cfg.burst) +
                     ": such a call could never pass");
  }
  c.request.client = f.client.value_or("");
  c.request.peek = f.peek;
  c.request.reconfigure = f.reconfigure;
  if (f.peek && f.reconfigure) throw UsageError("--peek changes nothing; it cannot --reconfigure");
  c.wait = f.wait.empty() ? Millis(0) : parse_duration(f.wait, "--wait", /*allow_forever=*/true);
  return c;
}

long long ceil_ms(prim::Micros us) { return (us.count() + 999) / 1000; }

Json decision_json(const std::string& name, const Call& c, const prim::LimitDecision& d) {
  return {{"name", name},
          {"allowed", d.allowed},
          {"cost", c.request.cost},
          {"remaining", d.remaining},
          {"limit", c.request.config.burst},
          {"retry_after_ms", ceil_ms(d.retry_after)},
          {"reset_after_ms", ceil_ms(d.reset_after)},
          {"now_ms", d.now_ms}};
}

// Where a stop signal (INT, TERM, HUP, QUIT) shows up while --wait sleeps: the
// supervision's signal fd with a command, a signal fd of its own without one.
struct Interrupts {
  int fd = -1;
  std::function<int()> stop_signal;  // the stop signal that came (0: none); drains the fd
};

// Sleeps `d` (boot clock) unless a stop signal comes first; returns that signal, 0 if slept.
int sleep_or_stop(prim::Micros d, const Interrupts& in) {
  Deadline until = SteadyClock::now() + d;
  for (;;) {
    auto left = until - SteadyClock::now();
    if (left.count() <= 0) return 0;
    timespec ts{static_cast<time_t>(left.count() / 1'000'000'000),
                static_cast<long>(left.count() % 1'000'000'000)};
    pollfd p{in.fd, POLLIN, 0};
    if (ppoll(&p, 1, &ts, nullptr) > 0) {
      if (int s = in.stop_signal()) return s;
    }
  }
}

// The result of deciding (and, with --wait, retrying) a call.
struct Outcome {
  std::optional<prim::LimitDecision> decision;  // nullopt: failed open
  int stopped_by = 0;                           // a stop signal ended the wait
};

// One decision of rlock's limiter or of Redisson's RRateLimiter.
struct Decider {
  std::string name;
  std::function<prim::LimitOutcome(const prim::LimitRequest&)> decide;
};

prim::LimitDecision decide_once(const Decider& limiter, const Call& c) {
  auto outcome = limiter.decide(c.request);
  if (const auto* m = std::get_if<prim::ConfigMismatch>(&outcome)) {
    throw DataError("limiter '" + limiter.name + "' is configured with " +
                    describe(m->stored, c.redisson) + "; given " +
                    describe(c.request.config, c.redisson) +
                    "; nothing changed (--reconfigure to change it)");
  }
  return std::get<prim::LimitDecision>(outcome);
}

// Decides, and while limited with --wait left, sleeps until the reported retry time and
// decides again. Redis unreachable: fails open with --fail-open, else throws.
Outcome decide(const Decider& limiter, const Call& c, bool fail_open, const Console& console,
               const Interrupts* interrupts) {
  Deadline until = SteadyClock::now() + c.wait;
  std::optional<prim::LimitDecision> slept_on;  // the limited decision the last sleep followed
  for (;;) {
    // A sleep ends at the retry time, which was within --wait; a process stopped (SIGSTOP)
    // past the end of --wait wakes later and must not get a call through after it.
    if (slept_on && SteadyClock::now() > until) {
      console.explain(
          "--wait ran out while this process did not run (stopped, suspended): giving up");
      return {slept_on, 0};
    }
    prim::LimitDecision d;
    try {
      d = decide_once(limiter, c);
    } catch (const Error& e) {
      // Unreachable, timed out, or a server that cannot serve now (a read-only replica,
      // LOADING, OOM, ...): all exit 69, and all are what --fail-open is for.
      if (!fail_open || e.exit_code() != kExitUnavailable) throw;
      console.warning(std::string(e.what()) + "; --fail-open: allowing the call undecided");
      return {};
    }
    if (d.allowed || c.wait.count() == 0) return {d, 0};
    auto left = std::chrono::duration_cast<prim::Micros>(until - SteadyClock::now());
    if (d.retry_after > left) {
      console.explain("limited; the next call could pass in " +
                      format_duration(Millis(ceil_ms(d.retry_after))) + ", after the " +
                      format_duration(std::chrono::duration_cast<Millis>(left)) +
                      " left of --wait: giving up now");
      return {d, 0};
    }
    console.explain("limited; retrying in " + format_duration(Millis(ceil_ms(d.retry_after))));
    if (int s = sleep_or_stop(d.retry_after, *interrupts)) return {d, s};
    slept_on = d;
  }
}

Json failed_open_json(const std::string& name, const Call& c) {
  return {{"name", name},
          {"allowed", true},
          {"cost", c.request.cost},
          {"remaining", nullptr},
          {"limit", c.request.config.burst},
          {"retry_after_ms", 0},
          {"reset_after_ms", nullptr},
          {"now_ms", nullptr},
          {"failed_open", true}};
}

int run_reset(const LimitFlags& f, const std::vector<std::string>& command, const Settings& s) {
  validate_name(f.name);
  const bool redisson = s.layout == Layout::kRedisson;
  if (redisson) check_redisson_name(f, s);
  if (!command.empty()) throw UsageError("--reset runs no command; leave out '-- CMD'");
  // Redisson keeps each client's state under its id: --client names whose to clear.
  for (const auto* o : f.decision_options) {
    if (o->count() > 0 && !(redisson && o->get_name() == "--client"))
      throw UsageError("--reset takes no " + o->get_name() + "; it clears all");
  }
  if (f.client) validate_client_id(*f.client);
  Console console(s);
  redis::Topology topology = open_topology(s);
  prim::RedissonLayout redisson_layout(s.prefix);
  prim::KeyLayout layout(s.prefix);
  auto r =
      redisson
          ? prim::RedissonLimiter(topology, redisson_layout, f.name).reset(f.client.value_or(""))
          : prim::Limiter(topology, layout, f.name).reset();
  console.result({{"name", f.name}, {"reset", r.existed}, {"client_buckets", r.client_buckets}});
  return 0;
}

int run_limit(const LimitFlags& f, const std::vector<std::string>& command, const Settings& s) {
  if (f.reset) return run_reset(f, command, s);
  Call c = resolve_call(f, s);
  if (!command.empty() && c.request.peek) throw UsageError("--peek runs no command");
  Console console(s);
  // With a command, the supervision's signal fd catches stop signals from the start (as
  // exec's wait does); without one, only a wait needs to catch them.
  std::optional<Supervision> supervision;
  std::optional<exec::SignalFd> signals;
  Interrupts interrupts;
  if (!command.empty()) {
    supervision.emplace(SuperviseFlags{}, kNoLease, console);
    interrupts = {supervision->wait_hooks({}).interrupt_fd,
                  [&supervision] { return supervision->stop_signal(); }};
  } else if (c.wait.count() > 0) {
    signals.emplace();
    interrupts = {signals->fd(), [&signals] {
                    int stop = 0;
                    while (auto sig = signals->next())
                      if (exec::is_forwarded(*sig)) stop = *sig;
                    return stop;
                  }};
  }
  redis::Topology topology = open_topology(s);
  prim::KeyLayout layout(s.prefix);
  prim::RedissonLayout redisson_layout(s.prefix);
  prim::Limiter own(topology, layout, f.name);
  prim::RedissonLimiter redisson(topology, redisson_layout, f.name);
  Decider limiter{f.name, [&](const prim::LimitRequest& r) {
                    return c.redisson ? redisson.decide(r) : own.decide(r);
                  }};
  if (supervision) supervision->prepare_during_next_script(topology);
  Outcome o = decide(limiter, c, f.fail_open, console, &interrupts);
  if (o.stopped_by) {
    console.notice("interrupted by signal " + std::to_string(o.stopped_by) +
                   " while waiting for limiter '" + f.name + "'" +
                   (command.empty() ? "" : "; the command did not run"));
    return 128 + o.stopped_by;
  }
  bool allowed = !o.decision || o.decision->allowed;
  // A command owns stdout once it runs; the decision is printed when it does not.
  if (command.empty() || !allowed)
    console.result(o.decision ? decision_json(f.name, c, *o.decision)
                              : failed_open_json(f.name, c));
  if (!allowed) {
    if (!command.empty())
      console.notice("limiter '" + f.name + "': limited, retry in " +
                     format_duration(Millis(ceil_ms(o.decision->retry_after))) +
                     "; not running the command");
    return f.conflict_exit_code;
  }
  if (command.empty()) return 0;
  if (int signo = supervision->stop_signal()) {
    console.notice("interrupted by signal " + std::to_string(signo) + "; the command did not run");
    return 128 + signo;
  }
  return supervision->run_unheld(command, {{"RLOCK_NAME", f.name}}, topology);
}

}  // namespace

Runner define_limit_command(CLI::App& app, std::vector<std::string>& command) {
  auto f = std::make_shared<LimitFlags>();
  add_table_option(app, "name", f->name)->required();
  add_table_option(app, "--rate", f->rate);
  add_table_option(app, "--per", f->per);
  add_table_option(app, "--burst", f->burst);
  add_table_option(app, "--cost", f->cost);
  add_table_option(app, "--client", f->client);
  add_table_option(app, "--client-rate", f->client_rate);
  add_table_option_function(app, "--wait", [f](const std::string& v) {
    parse_duration(v, "--wait", /*allow_forever=*/true);
    f->wait = v;
  });
  add_table_flag(app, "--peek", f->peek);
  add_table_flag(app, "--reconfigure", f->reconfigure);
  add_table_flag(app, "--fail-open", f->fail_open);
  add_table_flag(app, "--reset", f->reset);
  add_conflict_exit_code_flag(app, f->conflict_exit_code);
  for (const char* o :
       {"--rate", "--per", "--burst", "--cost", "--client", "--client-rate", "--wait", "--peek",
        "--reconfigure", "--fail-open", "--conflict-exit-code"}) {
    f->decision_options.push_back(app.get_option(o));
  }

  app.footer(
      R"(Decides one call with GCRA (a theoretical arrival time per bucket) on the Redis server's
clock, in one round trip, and prints {"name","allowed","cost","remaining","limit",
"retry_after_ms","reset_after_ms","now_ms"}: remaining = calls of cost 1 that would pass
now, limit = --burst, retry_after_ms = when this call would pass (0 when allowed),
reset_after_ms = when the limiter is idle and full again (its keys expire then; --peek:
as it is, the peeked call not consumed), now_ms = the server time of the decision. Exit 0 allowed, 75 (or -E) limited.

The config (--rate, --per, --burst, --client and --client-rate) is stored with the limiter
while it has state; a call with another config is refused (exit 65) unless --reconfigure,
which keeps the used fraction of the burst. --client ID gives each client its own bucket
at --rate; with --client-rate M, a call must pass both the overall --rate and M for its
client (both consume or neither does). --cost above --burst: exit 64.

--wait DUR: when limited, sleep until the reported retry time and try again, giving up at
once (75) when that is past DUR. -- CMD: run CMD (no shell, signals forwarded, as exec
does) when allowed and exit with its status; limited: CMD does not run, exit 75 (the JSON
is printed only then). Redis unreachable or unable to serve (a read-only replica): exit
69, or with --fail-open the call passes ({"allowed":true,...,"failed_open":true} and one
line on stderr). --reset clears the
limiter: prints {"name","reset","client_buckets"}.

--layout redisson: the limiter is Redisson's RRateLimiter of that name (its config hash,
{NAME}:value and the sliding log {NAME}:permits; with --client ID, PER_CLIENT and the keys
{NAME}:value:ID, {NAME}:permits:ID, ID being the Java instance's id): a call passes when
fewer than --rate permits were taken in the last --per, stamped with the server's clock
(Redisson stamps the client's). A new limiter is created as trySetRate does; --reconfigure
is setRate keeping the permits taken. --burst and --client-rate have no Redisson form
(exit 64); --reset deletes what delete() does (with --client, that client's keys too).

Examples:
  rlock limit api --rate 10 --per 1s --burst 5              # one call, 10/s, bursts of 5
  rlock limit mail --rate 100 --per 1h --wait 5m -- ./send-mail.sh
  rlock limit api --rate 100 --per 1s --client "$USER" --client-rate 10
  rlock limit api --rate 20 --per 1s --burst 5 --reconfigure
  rlock limit api --reset)");

  return {[f, &command](const Settings& settings) { return run_limit(*f, command, settings); }};
}

}  // namespace rlock::cli
