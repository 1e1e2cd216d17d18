#include <CLI/CLI.hpp>
#include <charconv>
#include <memory>
#include <optional>

#include "cli/ancestry.hpp"
#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "cli/lock_options.hpp"
#include "cli/sem_rsem.hpp"
#include "cli/stop_signals.hpp"
#include "cli/supervised.hpp"
#include "cli/wait_line.hpp"
#include "cli/whole_flag.hpp"
#include "prim/redisson_semaphore.hpp"
#include "prim/semaphore.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

// Bounds that keep one script's work small: permits are created one by one in it.
constexpr long long kMaxCapacity = 1'000'000;
constexpr long long kMaxCount = 10'000;
// `sem status` lists at most this many permits and waiters per call by default (--limit).
constexpr long long kDefaultStatusLimit = 1000;
constexpr long long kMaxStatusLimit = 10'000;

struct PermitFlags {
  LockFlags lock;
  std::string permits;
  std::string count = "1";
  bool resize = false;
};

struct SemFlags {
  PermitFlags take;  // acquire and exec
  SuperviseFlags supervise;
  std::string name;              // release, renew, status
  std::string give_count = "1";  // release of an RSemaphore's anonymous permits
  std::vector<std::string> ids;
  std::string lease = "30s";
  bool force = false;
  std::string limit = std::to_string(kDefaultStatusLimit);  // status
  std::string after;                                        // status: the "next" of the page before
};

// The subcommands of `sem`, by the name CLI11 parsed.
struct SemApps {
  CLI::App* acquire;
  CLI::App* release;
  CLI::App* renew;
  CLI::App* status;
  CLI::App* exec;
};

void add_permit_flags(CLI::App& sub, PermitFlags& f) {
  add_lock_flags(sub, f.lock);
  add_table_option(sub, "--permits", f.permits);
  add_table_option(sub, "--count", f.count);
  add_table_flag(sub, "--resize", f.resize);
}

struct Take {
  LockRequest lock;
  prim::PermitRequest permits;
};

bool rsemaphore(const Settings& settings) {
  return settings.layout == Layout::kRedisson && sem_object(settings) == RedissonObject::kSemaphore;
}

// An RSemaphore's --permits is optional (it only sets one never set): 0 when not given.
Take resolve_take(const PermitFlags& f, const Settings& settings) {
  Take t{resolve_lock_request(f.lock, settings), {}};
  if (f.permits.empty() && !rsemaphore(settings))
    throw UsageError("--permits is required; see rlock help sem");
  const long long permits =
      f.permits.empty() ? 0 : parse_whole_flag(f.permits, "--permits", 1, kMaxCapacity);
  const long long count = parse_whole_flag(f.count, "--count", 1, kMaxCount);
  if (permits > 0 && count > permits)
    throw UsageError("--count must be from 1 to --permits " + std::to_string(permits) +
                     " (at most " + std::to_string(kMaxCount) + "), not " + std::to_string(count));
  t.permits = {t.lock.owner, permits, count, t.lock.lease, f.resize};
  return t;
}

Json strings_json(const std::vector<std::string>& v) {
  Json arr = Json::array();
  for (const auto& s : v) arr.push_back(s);
  return arr;
}

// Under --layout redisson every operation of `sem` is Redisson's RPermitExpirableSemaphore's
// (or RSemaphore's, --redisson-object semaphore).
void select_sem(prim::Semaphore& sem, const Settings& settings) {
  if (settings.layout == Layout::kRedisson)
    sem.use_redisson(sem_object(settings) == RedissonObject::kSemaphore);
}

bool given(const CLI::App* sub, const char* flag) { return sub->get_option(flag)->count() > 0; }

// What `sem` refuses before it connects: release --count but of an RSemaphore; under
// --layout redisson, what an RSemaphore (anonymous permits without expiry) has nothing for
// (check_rsem_flags), --note, and permit ids not Redisson's.
void check_redisson_sem(const Settings& settings, const SemFlags& f, const SemApps& s) {
  if (given(s.release, "--count") && !rsemaphore(settings))
    throw UsageError(
        "--count gives back anonymous permits of Redisson's RSemaphore (--layout redisson "
        "--redisson-object semaphore); these permits are released by --permit ID");
  if (settings.layout != Layout::kRedisson) return;
  if (rsemaphore(settings)) {
    check_rsem_flags({.renew = s.renew->parsed(),
                      .acquire = s.acquire->parsed(),
                      .lease = given(s.acquire, "--lease"),
                      .resize = f.take.resize,
                      .force = f.force,
                      .ids = !f.ids.empty(),
                      .paging = given(s.status, "--limit") || given(s.status, "--after")});
  }
  if (!f.take.lock.note.empty())
    throw UsageError(
        "--note is refused under --layout redisson: Redisson's semaphore keeps no notes, and "
        "none of its clients would see one");
  prim::check_redisson_permit_ids(f.ids);
}

// A permit's owner; null for Redisson's, which keep none.
Json owner_json(const prim::PermitInfo& p) { return p.owner.empty() ? Json() : Json(p.owner); }

std::string describe_busy(const std::string& name, const prim::PermitsBusy& b) {
  std::string line = "semaphore '" + name + "': " + std::to_string(b.in_use) + " of " +
                     std::to_string(b.capacity) + " permits in use";
  if (b.next_expiry.count() >= 0)
    line += ", the next lease ends in " + format_duration(b.next_expiry);
  return line;
}

prim::WaitHooks permit_wait_hooks(const Console& console, const std::string& name) {
  prim::WaitHooks hooks;
  if (console.verbose()) {
    hooks.on_wait = [&console, name](const prim::Waitable::Step& busy, Millis left) {
      console.explain("waiting for semaphore '" + name + "' (" + busy.holders +
                      "); queued: a release hands permits over; " +
                      (left > kMaxDuration / 2 ? std::string("no time limit")
                                               : "giving up in " + format_duration(left)));
    };
    hooks.on_reconnect = [&console](const std::string& why) {
      console.explain("reconnecting to keep the place in the queue: " + why);
    };
  }
  return WaitLine::attach(WaitLine::on_terminal(console.quiet(), "semaphore '" + name + "'"),
                          hooks);
}

// What stands when the result could not be printed: the permits, and how to give them back.
std::string held_line(const Take& t, const prim::PermitsHeld& held) {
  std::string release = "rlock sem release " + shell_quote(t.lock.name);
  for (const auto& id : held.ids) release += " --permit " + shell_quote(id);
  return "semaphore '" + t.lock.name + "': " + std::to_string(held.ids.size()) +
         (held.ids.size() == 1 ? " permit is" : " permits are") + " held all the same (owner '" +
         t.lock.owner + "', lease " + format_duration(held.lease) + "); give " +
         (held.ids.size() == 1 ? "it" : "them") + " back with: " + release;
}

int run_acquire(const SemFlags& f, const Settings& settings) {
  Console console(settings);
  Take t = resolve_take(f.take, settings);
  if (rsemaphore(settings))
    return run_rsem_acquire(t.lock, t.permits.count, t.permits.capacity, settings);
  // As `lock`: only a wait takes the stop signals.
  std::optional<StopSignals> stops;
  if (t.lock.wait.count() > 0) stops.emplace();
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::Semaphore sem(topology, layout, t.lock.name);
  select_sem(sem, settings);
  sem.set_ancestry(inherited_holds());
  sem.set_note(t.lock.note);
  prim::WaitHooks hooks = permit_wait_hooks(console, t.lock.name);
  if (stops) hooks = stops->attach(std::move(hooks));
  auto a = sem.acquire(t.permits, t.lock.wait_until, hooks);
  if (int signo = stops ? stops->stop_signal() : 0) {  // while connecting, waiting, or at the grant
    if (const auto* held = std::get_if<prim::PermitsHeld>(&a)) sem.release(held->ids);
    console.notice("interrupted by signal " + std::to_string(signo) +
                   " while waiting for semaphore '" + t.lock.name + "'; no permit is held");
    return 128 + signo;
  }
  if (const auto* busy = std::get_if<prim::PermitsBusy>(&a)) {
    console.result({{"name", t.lock.name},
                    {"acquired", false},
                    {"in_use", busy->in_use},
                    {"capacity", busy->capacity},
                    {"ttl_ms", busy->next_expiry.count()}});
    return t.lock.conflict_exit_code;
  }
  const auto& held = std::get<prim::PermitsHeld>(a);
  Json out = {{"name", t.lock.name},
              {"owner", t.lock.owner},
              {"acquired", true},
              {"permits", strings_json(held.ids)},
              {"capacity", t.permits.capacity},
              {"lease_ms", held.lease.count()}};
  if (held.replicas_acked >= 0) out["replicas_acked"] = held.replicas_acked;
  console.result(out, held_line(t, held));
  return 0;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// One wait for the permits and, once they are held, the command run under them.
int acquire_and_run(const std::vector<std::string>& command, const Take& t, const Console& console,
                    Supervision& supervision, redis::Topology& topology, prim::Semaphore& sem) {
  auto inherited = inherited_holds();
  sem.set_ancestry(inherited);
  sem.set_note(t.lock.note);
  auto a = sem.acquire(t.permits, t.lock.wait_until,
                       supervision.wait_hooks(permit_wait_hooks(console, t.lock.name)));
  if (int signo = supervision.stop_signal()) {  // while connecting, waiting, or at the grant
    if (const auto* held = std::get_if<prim::PermitsHeld>(&a)) sem.release(held->ids);
    console.notice("interrupted by signal " + std::to_string(signo) +
                   " while waiting for semaphore '" + t.lock.name + "'; the command did not run");
    return 128 + signo;
  }
  if (const auto* busy = std::get_if<prim::PermitsBusy>(&a)) {
    console.notice(describe_busy(t.lock.name, *busy) + "; not running the command");
    return t.lock.conflict_exit_code;
  }
  const auto& held = std::get<prim::PermitsHeld>(a);
  JobHold job;
  job.name = t.lock.name;
  job.owner = t.lock.owner;
  const size_t taken = held.ids.empty() ? static_cast<size_t>(held.count) : held.ids.size();
  job.what = std::to_string(taken) + " permit(s) of semaphore '" + t.lock.name + "'";
  job.env = {{"RLOCK_PERMITS", join(held.ids, " ")}};
  job.holds = holds_for_job(inherited, {held.request_id, t.lock.owner});
  return supervision.run_held(command, job, sem.hold(held, t.lock.lease), topology);
}

int run_exec(const SemFlags& f, const std::vector<std::string>& command, const Settings& settings) {
  Console console(settings);
  Take t = resolve_take(f.take, settings);
  Supervision supervision(f.supervise, t.lock.lease, console);
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::Semaphore sem(topology, layout, t.lock.name);
  select_sem(sem, settings);
  supervision.prepare_during_next_script(topology);
  return supervision.until_in_time(t.lock.wait_until, [&] {
    return acquire_and_run(command, t, console, supervision, topology, sem);
  });
}

std::string not_held_line(const std::string& name, const std::vector<std::string>& ids) {
  return "semaphore '" + name + "': permit" + (ids.size() > 1 ? "s " : " ") + join(ids, ", ") +
         (ids.size() > 1 ? " are" : " is") +
         " not held (expired, released already or never issued); nothing changed for " +
         (ids.size() > 1 ? "them" : "it");
}

int run_release(const SemFlags& f, const Settings& settings) {
  Console console(settings);
  validate_name(f.name);
  if (rsemaphore(settings))
    return run_rsem_release(f.name, parse_whole_flag(f.give_count, "--count", 1, kMaxCount),
                            settings);
  if (!f.force && f.ids.empty()) throw UsageError("sem release needs --permit ID or --force");
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::Semaphore sem(topology, layout, f.name);
  select_sem(sem, settings);
  if (f.force) {
    Json freed = Json::array();
    for (const auto& p : sem.force_release())
      freed.push_back({{"id", p.id}, {"owner", owner_json(p)}});
    console.result({{"name", f.name}, {"forced", true}, {"permits", freed}});
    return 0;
  }
  auto r = sem.release(f.ids);
  if (!r.not_held.empty() && r.released == 0)
    throw Error(kExitNotNow, not_held_line(f.name, r.not_held));
  console.result(
      {{"name", f.name}, {"released", r.released}, {"not_held", strings_json(r.not_held)}});
  if (!r.not_held.empty()) {
    console.notice(not_held_line(f.name, r.not_held));
    return kExitNotNow;
  }
  return 0;
}

int run_renew(const SemFlags& f, const Settings& settings) {
  Console console(settings);
  validate_name(f.name);
  if (f.ids.empty()) throw UsageError("sem renew needs --permit ID");
  Millis lease = parse_duration(f.lease, "--lease");
  if (lease.count() < 1) throw UsageError("--lease must be at least 1ms");
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::Semaphore sem(topology, layout, f.name);
  select_sem(sem, settings);
  auto missing = sem.renew(f.ids, lease);
  if (!missing.empty()) {
    throw Error(kExitNotNow, not_held_line(f.name, missing) +
                                 " and none was renewed; a lost permit is never taken again "
                                 "by a renewal (sem acquire takes a new one)");
  }
  console.result({{"name", f.name},
                  {"renewed", true},
                  {"permits", strings_json(f.ids)},
                  {"lease_ms", lease.count()}});
  return 0;
}

// The page --after names: "<permit rank>:<waiter rank>" as `next` printed it (-1: that
// list is done).
prim::SemaphorePage status_page(const SemFlags& f) {
  prim::SemaphorePage page;
  page.limit = parse_whole_flag(f.limit, "--limit", 1, kMaxStatusLimit);
  if (f.after.empty()) return page;
  auto rank = [&](std::string_view text, long long& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return !text.empty() && ec == std::errc() && end == text.data() + text.size() && out >= -1;
  };
  size_t colon = f.after.find(':');
  if (colon == std::string::npos ||
      !rank(std::string_view(f.after).substr(0, colon), page.permits_from) ||
      !rank(std::string_view(f.after).substr(colon + 1), page.waiters_from))
    throw UsageError("--after takes the \"next\" value a status printed (such as 1000:0), not '" +
                     f.after + "'");
  return page;
}

int run_status(const SemFlags& f, const Settings& settings) {
  Console console(settings);
  validate_name(f.name);
  if (rsemaphore(settings)) return run_rsem_status(f.name, settings);
  prim::SemaphorePage page = status_page(f);
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  auto s = settings.layout == Layout::kRedisson
               ? prim::RedissonSemaphore(topology, f.name, settings.prefix).read(page)
               : prim::read_semaphore(topology, layout, f.name, page);
  Json waiters = Json::array();
  for (const auto& w : s.waiters) {
    waiters.push_back({{"owner", w.owner},
                       {"count", w.count},
                       {"waited_ms", w.waited.count()},
                       {"granted", w.granted}});
  }
  Json permits = Json::array();
  for (const auto& p : s.permits)
    permits.push_back({{"id", p.id}, {"owner", owner_json(p)}, {"lease_ms", p.lease_left.count()}});
  Json next = nullptr;
  if (s.next_permits_from >= 0 || s.next_waiters_from >= 0)
    next = std::to_string(s.next_permits_from) + ":" + std::to_string(s.next_waiters_from);
  console.result({{"name", f.name},
                  {"capacity", s.capacity},
                  {"in_use", s.permits_total},
                  {"free", std::max(s.capacity - s.permits_total - s.reserved, 0LL)},
                  {"permits", permits},
                  {"waiters", waiters},
                  {"waiters_total", s.waiters_total},
                  {"next", next}});
  return 0;
}

void add_name(CLI::App& sub, std::string& name) { add_table_option(sub, "name", name)->required(); }

void add_ids(CLI::App& sub, std::vector<std::string>& ids) {
  add_table_option(sub, "--permit", ids)->expected(1, -1);
}

SemApps define_subcommands(CLI::App& app, SemFlags& f) {
  SemApps s{};
  s.acquire = app.add_subcommand("acquire", "Take permits and print their ids");
  add_permit_flags(*s.acquire, f.take);
  s.release = app.add_subcommand("release", "Give permits back (--force: all of them)");
  add_name(*s.release, f.name);
  add_ids(*s.release, f.ids);
  add_table_flag(*s.release, "--force", f.force)->excludes(s.release->get_option("--permit"));
  add_table_option(*s.release, "--count", f.give_count);
  s.renew = app.add_subcommand("renew", "Extend the lease of held permits");
  add_name(*s.renew, f.name);
  add_ids(*s.renew, f.ids);
  add_table_option(*s.renew, "--lease", f.lease);
  s.status = app.add_subcommand("status", "Capacity, permits in use, waiters (paged)");
  add_name(*s.status, f.name);
  add_table_option(*s.status, "--limit", f.limit);
  add_table_option(*s.status, "--after", f.after);
  s.exec = app.add_subcommand("exec", "Run a command while holding permits");
  add_permit_flags(*s.exec, f.take);
  add_supervise_flags(*s.exec, f.supervise);
  return s;
}

}  // namespace

Runner define_sem_command(CLI::App& app, std::vector<std::string>& command) {
  auto flags = std::make_shared<SemFlags>();
  SemApps s = define_subcommands(app, *flags);
  app.require_subcommand(1, 1);
  app.footer(R"(A counting semaphore whose permits each have a lease on the Redis server's clock: a
crashed holder's permits come back when their lease ends. The capacity (--permits) is
stored at first use; another --permits is refused (exit 65) unless --resize (a shrink
takes effect as permits are released). A resize is administrative: requests already
queued or granted keep their place and grant; one asking for more permits than a shrink
left exits 65 saying so. Waiters queue FIFO; a release hands the permits to
the head waiter, and a request for K permits at the head is served before later ones.

  acquire  prints {"name","owner","acquired":true,"permits":[ids],"capacity","lease_ms"};
           busy: {"name","acquired":false,"in_use","capacity","ttl_ms"}, exit 75 (or -E)
  release  prints {"name","released","not_held"}; an id not held (expired, released
           already, forged) changes nothing and exits 75; --force frees all
  renew    all ids or none; an expired or unknown permit is never re-acquired: exit 75
  status   prints {"name","capacity","in_use","free","permits":[{"id","owner","lease_ms"}],
           "waiters":[{"owner","count","waited_ms","granted"}],"waiters_total","next"}:
           at most --limit N (default 1000) permits (by lease end) and waiters (queue
           order); next is null when all were listed, else pass it as --after C for the
           next page (a page is read at once; pages are not one snapshot)
  exec     runs CMD as `rlock exec` does (renewal, --on-lost, signals, exit codes, 76 when a
           permit is lost), with RLOCK_NAME, RLOCK_OWNER, RLOCK_PERMITS (ids),
           RLOCK_LEASE_MS and RLOCK_HOLDS in its environment; a request of the job for
           permits only their release could free is refused at once, exit 65

Under --layout redisson, sem is Redisson's RPermitExpirableSemaphore of the name (the bare
name's free count, {NAME}:timeout, redisson_sc:{NAME}): permit ids are Redisson's 32 hex
digits, usable by either side; --permits sets a semaphore not set yet (trySetPermits) and
must equal its total otherwise (--resize: setPermits); no queue (a release wakes every
waiter, the first to retry wins); no --note. --redisson-object semaphore is RSemaphore:
anonymous permits that never expire, the free count alone (--permits optional: it only
sets one never set). acquire --count K is tryAcquire(K, --wait) and prints
{"name","acquired","count","free"} (busy: exit 75); release --count K gives K back, as
anyone may, printing {"name","released","free"}; status prints {"name","exists",
"capacity":null,"in_use":null,"free"}; exec gives back what it took when the job ends.
No lease and no ids: renew, --resize, acquire --lease, release --force and --permit exit
64; a killed rlock leaks its permits, as a killed Java client does. See docs/redisson.md.

Examples:
  rlock sem exec --permits 3 --wait 10m encoders -- ./encode.sh in.mp4   # at most 3 at once
  rlock sem acquire --permits 3 encoders --lease 5m --owner ci-42        # prints permit ids
  rlock sem renew encoders --permit 3f2a9c1d7e6b5a40.1 --lease 5m
  rlock sem release encoders --permit 3f2a9c1d7e6b5a40.1
  rlock sem acquire --permits 5 --resize encoders                        # grow to 5
  rlock sem status encoders)");
  return {[flags, s, &command](const Settings& settings) {
    check_redisson_sem(settings, *flags, s);
    if (!s.exec->parsed() && !command.empty())
      throw UsageError("only sem exec runs a command after '--'");
    if (s.acquire->parsed()) return run_acquire(*flags, settings);
    if (s.release->parsed()) return run_release(*flags, settings);
    if (s.renew->parsed()) return run_renew(*flags, settings);
    if (s.status->parsed()) return run_status(*flags, settings);
    if (command.empty())
      throw UsageError("sem exec: missing '--' before the command (" +
                       std::string("rlock sem exec [OPTIONS] NAME -- CMD [ARGS...])"));
    return run_exec(*flags, command, settings);
  }};
}

}  // namespace rlock::cli
