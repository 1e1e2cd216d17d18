#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "cli/lock_options.hpp"
#include "cli/stdout_writer.hpp"
#include "cli/supervised.hpp"
#include "cli/wait_line.hpp"
#include "cli/whole_flag.hpp"
#include "exec/signals.hpp"
#include "prim/delay_queue.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"
#include "util/owner.hpp"
#include "util/timestamp.hpp"
#include "util/utf8.hpp"

namespace rlock::cli {
namespace {

constexpr long long kMaxCount = 1000;
// Deliveries are counted by the scripts in Lua numbers: far below where they stop being exact.
constexpr long long kMaxDeliveries = 1'000'000'000;
// A --forever consumer that lost Redis tries again after this long.
constexpr Millis kForeverRetry{1000};

struct PopFlags {
  std::string queue;
  std::string wait;
  std::optional<std::string> count;
  std::optional<std::string> visibility;
  std::optional<std::string> max_deliveries;
  bool forever = false;
  bool dead = false;
  int conflict_exit_code = kExitNotNow;
  SuperviseFlags supervise;
};

struct PopRequest {
  long long count = 1;
  Millis wait{0};
  Millis visibility{30'000};
  long long max_deliveries = 0;  // 0: no limit
};

// `bytes` as field `key` of `j`: a JSON string when valid UTF-8; otherwise null, and
// `key`_base64 holds the bytes, so that no byte is ever lost or replaced (ids and payloads
// may come from other programs).
void put_bytes(Json& j, const std::string& key, const std::string& bytes) {
  if (invalid_utf8_at(bytes) == std::string::npos) {
    j[key] = bytes;
  } else {
    j[key] = nullptr;
    j[key + "_base64"] = base64(bytes);
  }
}

// One item as one JSON line.
std::string item_line(const std::string& queue, const prim::QueueItem& it, bool dead) {
  Json j = {{"queue", queue}};
  put_bytes(j, "id", it.id);
  if (it.no_payload) {
    j["payload"] = nullptr;
  } else {
    put_bytes(j, "payload", it.payload);
  }
  j["due_ms"] = it.due_ms;
  if (!dead) j["lateness_ms"] = it.lateness_ms;
  j["deliveries"] = it.deliveries;
  j[dead ? "read_ms" : "delivered_ms"] = it.now_ms;
  if (dead) j["reason"] = it.reason;
  // Only a reason can still hold foreign bytes (another program's metadata): it is text
  // for a person, and replacing them beats throwing with the items taken.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

// With fd 1 closed, the next descriptor opened (the Redis connection, a signalfd) would
// become "stdout" and the items would be written into it: refuse before taking any.
void require_stdout(const std::string& queue) {
  if (fcntl(STDOUT_FILENO, F_GETFD) < 0 && errno == EBADF)
    throw Error(kExitIoError,
                "standard output is closed; nothing was taken from queue '" + queue + "'");
}

std::string items_text(long long n) { return std::to_string(n) + (n == 1 ? " item" : " items"); }

// Items are data taken off the queue: printed whatever -q says, each line as it comes for
// a pipe reader. A failed write puts back the items whose lines did not go out whole
// (a line cut short is not a delivery) and throws exit 74 saying what became of them.
void print_items(prim::DelayQueue& q, const std::vector<prim::QueueItem>& items, bool dead) {
  std::string text;
  std::vector<size_t> ends;  // where each item's line ends in `text`
  for (const auto& it : items) {
    text += item_line(q.name(), it, dead);
    ends.push_back(text.size());
  }
  int error = 0;
  size_t written = write_stdout(text, &error);
  if (error == 0) return;
  size_t printed = 0;
  while (printed < ends.size() && ends[printed] <= written) ++printed;
  std::vector<prim::QueueItem> rest(items.begin() + static_cast<long>(printed), items.end());
  auto n = static_cast<long long>(rest.size());
  std::string what = stdout_failure(error) + "; ";
  try {
    long long back = q.put_back(rest, dead);
    std::string where = (dead ? "the dead letters of queue '" : "queue '") + q.name() + "'";
    if (back == n) {
      what += "the " + items_text(n) + " taken but not printed went back to " + where;
    } else {
      what += "of the " + items_text(n) + " taken but not printed, " + std::to_string(back) +
              " went back to " + where + " and " + std::to_string(n - back) +
              (n - back == 1 ? " is" : " are") + " lost (pushed again meanwhile under the same id)";
    }
  } catch (const Error& e) {
    // Unavailable: the request may have reached Redis before its reply was lost.
    what += "the " + items_text(n) + " taken but not printed " + (n == 1 ? "is" : "are") +
            (e.exit_code() == kExitUnavailable ? " lost unless the put-back reached Redis: "
                                               : " lost: putting back failed: ") +
            e.what();
  }
  throw Error(kExitIoError, what);
}

PopRequest resolve(const PopFlags& f, bool with_command) {
  validate_name(f.queue);
  PopRequest r;
  if (f.count) {
    r.count = parse_whole_flag(*f.count, "--count", 1, kMaxCount);
    if (with_command && r.count != 1)
      throw UsageError("--count: with -- CMD one run handles one item");
  }
  if (!with_command && !f.dead && (f.visibility || f.max_deliveries))
    throw UsageError("--visibility and --max-deliveries are for reliable consumption (-- CMD)");
  if (f.dead && (with_command || f.forever || !f.wait.empty() || f.visibility || f.max_deliveries))
    throw UsageError(
        "--dead reads the dead letters once: no -- CMD, --forever, --wait, "
        "--visibility or --max-deliveries");
  if (f.forever && !f.wait.empty()) throw UsageError("--forever waits for ever: no --wait");
  if (!f.wait.empty()) r.wait = parse_duration(f.wait, "--wait", /*allow_forever=*/true);
  if (f.visibility) {
    r.visibility = parse_duration(*f.visibility, "--visibility");
    if (r.visibility.count() < 1) throw UsageError("--visibility must be at least 1ms, not 0");
  }
  if (f.max_deliveries)
    r.max_deliveries = parse_whole_flag(*f.max_deliveries, "--max-deliveries", 1, kMaxDeliveries);
  return r;
}

std::string nothing_due(const std::string& queue, Millis wait) {
  return "queue '" + queue + "': no item was due" +
         (wait.count() > 0 ? " within --wait " + format_duration(wait) : std::string());
}

// Waits on `signals` for `d` (a --forever consumer's pause after losing Redis); true when a
// stop signal came.
bool pause_unless_stopped(exec::SignalFd& signals, Millis d) {
  Deadline end = SteadyClock::now() + d;
  while (SteadyClock::now() < end) {
    while (auto s = signals.next()) {
      if (exec::is_forwarded(*s)) return true;
    }
    std::this_thread::sleep_for(std::min(Millis(50), d));
  }
  return false;
}

prim::WaitHooks wait_line_hooks(const PopFlags& f, const Settings& settings,
                                prim::WaitHooks hooks) {
  return WaitLine::attach(WaitLine::on_terminal(settings.quiet, "queue '" + f.queue + "'"),
                          std::move(hooks));
}

// Without -- CMD: items are removed as they are printed (at-most-once).
int run_take(const PopFlags& f, const PopRequest& r, const Settings& settings) {
  Console console(settings);
  exec::SignalFd signals;
  int stop = 0;
  prim::WaitHooks hooks;
  hooks.interrupt_fd = signals.fd();
  hooks.should_stop = [&signals, &stop] {
    while (auto s = signals.next()) {
      if (exec::is_forwarded(*s)) stop = *s;
    }
    return stop != 0;
  };
  // A status line while --wait waits on a terminal; not under --forever, a consumer
  // service whose items go to the same terminal between its waits.
  if (!f.forever) hooks = wait_line_hooks(f, settings, hooks);
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::DelayQueue q(topology, layout, f.queue);
  do {
    bool interrupted = false;
    Deadline until = SteadyClock::now() + (f.forever ? kMaxDuration : r.wait);
    std::vector<prim::QueueItem> items;
    try {
      items = q.take(r.count, until, hooks, &interrupted);
    } catch (const Error& e) {
      if (!f.forever || e.exit_code() != kExitUnavailable) throw;
      console.notice(std::string(e.what()) + "; trying again in " + format_duration(kForeverRetry));
      if (pause_unless_stopped(signals, kForeverRetry)) return 0;
      continue;
    }
    if (interrupted) return f.forever ? 0 : 128 + stop;
    if (items.empty()) {
      console.notice(nothing_due(f.queue, r.wait));
      return f.conflict_exit_code;
    }
    print_items(q, items, false);
    if (f.forever && hooks.should_stop()) return 0;
  } while (f.forever);
  return 0;
}

// The payload becomes the command's stdin: a memfd (no pipe to feed while the command
// runs, so no size can deadlock it) put on rlock's own fd 0, which the command inherits.
// rlock never reads its stdin in this mode.
void payload_as_stdin(const std::string& payload) {
  int fd = memfd_create("rlock-item", MFD_CLOEXEC);
  if (fd < 0) throw Error(kExitInternal, std::string("memfd_create: ") + std::strerror(errno));
  size_t done = 0;
  while (done < payload.size()) {
    ssize_t n = write(fd, payload.data() + done, payload.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      throw Error(kExitInternal, std::string("writing the payload: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  if (dup2(fd, STDIN_FILENO) < 0) {
    close(fd);
    throw Error(kExitInternal, std::string("dup2: ") + std::strerror(errno));
  }
  close(fd);
}

struct Outcome {
  int code = 0;
  bool stop = false;  // a stop signal came: it ended the wait, or CMD had it forwarded
  bool none = false;  // nothing was due in time
};

// One item under -- CMD: leased, run, acknowledged on exit 0, given back otherwise.
Outcome run_one(const PopFlags& f, const PopRequest& r, const std::vector<std::string>& command,
                const Settings& settings, const std::string& consumer) {
  Console console(settings);
  Supervision supervision(f.supervise, r.visibility, console);
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::DelayQueue q(topology, layout, f.queue);
  Deadline until = SteadyClock::now() + (f.forever ? kMaxDuration : r.wait);
  supervision.prepare_during_next_script(topology);
  // An item leased too late to run is given back uncounted (due again at once) and leased
  // again: most likely by this consumer, which waits for it.
  return supervision.until_in_time(until, [&]() -> Outcome {
    auto hooks = supervision.wait_hooks({});
    if (!f.forever) hooks = wait_line_hooks(f, settings, hooks);
    auto leased = q.lease(r.visibility, r.max_deliveries, consumer, until, hooks);
    if (int signo = supervision.stop_signal()) {
      if (leased) q.give_back(*leased);
      if (!f.forever)
        console.notice("interrupted by signal " + std::to_string(signo) +
                       " while waiting on queue '" + f.queue + "'; the command did not run");
      return {128 + signo, true, false};
    }
    if (!leased) return {f.conflict_exit_code, false, true};
    const prim::QueueItem& it = leased->item;
    console.explain("leased item '" + it.id + "' of queue '" + f.queue + "' (delivery " +
                    std::to_string(it.deliveries) + ", visibility " +
                    format_duration(r.visibility) + ", renewed every " +
                    format_duration(supervision.renew_interval()) + ")");
    payload_as_stdin(it.payload);
    int code = supervision.run(command,
                               {{"RLOCK_QUEUE", f.queue},
                                {"RLOCK_ITEM_ID", it.id},
                                {"RLOCK_DELIVERIES", std::to_string(it.deliveries)},
                                {"RLOCK_DUE_MS", std::to_string(it.due_ms)},
                                {"RLOCK_LEASE_MS", std::to_string(r.visibility.count())}},
                               q.hold(*leased), topology);
    // The item is settled (acknowledged or given back) when run() returns.
    return {code, supervision.stop_signal() != 0, false};
  });
}

int run_command(const PopFlags& f, const PopRequest& r, const std::vector<std::string>& command,
                const Settings& settings) {
  Console console(settings);
  std::string consumer = default_owner();
  // Each item's Supervision diverts the stop signals only while it lives: between items
  // (and in the pause after losing Redis) --forever keeps them diverted here, so that one
  // arriving then ends the service cleanly instead of killing rlock.
  std::optional<exec::SignalFd> between;
  if (f.forever) between.emplace();
  auto stopped = [&between] {
    bool stop = false;
    while (auto s = between->next()) stop = stop || exec::is_forwarded(*s);
    return stop;
  };
  while (true) {
    Outcome o;
    try {
      o = run_one(f, r, command, settings, consumer);
    } catch (const Error& e) {
      if (!f.forever || e.exit_code() != kExitUnavailable) throw;
      console.notice(std::string(e.what()) + "; trying again in " + format_duration(kForeverRetry));
      if (pause_unless_stopped(*between, kForeverRetry)) return 0;
      continue;
    }
    if (!f.forever) {
      if (o.none) console.notice(nothing_due(f.queue, r.wait));
      return o.code;
    }
    // A stop signal during the wait, or forwarded to CMD (systemd signals the whole unit),
    // or after the item was settled: the service ends.
    if (o.stop || stopped()) return 0;
    if (o.code > 128 && exec::is_forwarded(o.code - 128)) return 0;
  }
}

int run_dead(const PopFlags& f, const PopRequest& r, const Settings& settings) {
  Console console(settings);
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::DelayQueue q(topology, layout, f.queue);
  auto items = q.take_dead(r.count);
  if (items.empty()) {
    console.notice("queue '" + f.queue + "' has no dead letters");
    return f.conflict_exit_code;
  }
  print_items(q, items, true);
  return 0;
}

}  // namespace

Runner define_delay_pop_command(CLI::App& app, std::vector<std::string>& command) {
  auto f = std::make_shared<PopFlags>();
  add_table_option(app, "queue", f->queue)->required();
  add_table_option(app, "--wait", f->wait);
  add_table_option(app, "--count", f->count);
  add_table_option(app, "--visibility", f->visibility);
  add_table_option(app, "--max-deliveries", f->max_deliveries);
  add_table_flag(app, "--forever", f->forever);
  add_table_flag(app, "--dead", f->dead);
  add_conflict_exit_code_flag(app, f->conflict_exit_code);
  add_supervise_flags(app, f->supervise);
  app.footer(R"(Takes due items of a delayed queue. Consumers do not poll: they sleep until the
earliest due time, or until a push of an earlier item wakes them (pub/sub); a lost wake-up
delays an item by at most 5s. Items due in the same millisecond come out in push order.
Each item prints as one JSON line {"queue","id","payload","due_ms","lateness_ms",
"deliveries","delivered_ms"} (times in server Unix ms; lateness_ms: how long it had been
due). An id or payload that is not valid UTF-8 (written by another program) prints as
null plus "id_base64" / "payload_base64". Items print even with -q. Nothing due within
--wait: exit 75 (or -E). An item that cannot be delivered (malformed metadata, no
payload) goes to the dead letters with a reason, and the pop goes on with the next.

Without CMD an item is removed as it is taken: at-most-once (a crash between the
take and the print, or a reply lost through every repeat within --timeout, loses it).
A failed write to stdout (full disk, closed pipe) exits 74, --forever too: the items
whose lines were not written whole are put back, due as before (a line cut short is
not a delivery); an item whose id was pushed again meanwhile, or all of them when
Redis cannot take them back, are lost, and the error line says how many. A closed
stdout exits 74 before anything is taken.
With -- CMD (no shell) the item is leased to this consumer
for --visibility, renewed while CMD runs (as exec renews a lock); CMD gets the payload on
stdin and RLOCK_QUEUE, RLOCK_ITEM_ID, RLOCK_DELIVERIES (1 on the first delivery),
RLOCK_DUE_MS and RLOCK_LEASE_MS. Exit 0 of CMD acknowledges (deletes) the item; any other
status gives it back, due again after --visibility; a crash of CMD or rlock, or a lost
lease, makes it due again when the lease runs out. rlock exits with CMD's status; 76 when
the lease was lost (CMD is stopped as exec stops a job) or the acknowledgement was
refused because the item went to another consumer meanwhile: an item completes once
(a retried acknowledgement whose reply was lost is told it went through).
After --max-deliveries deliveries an item goes to the dead letters; --dead prints and
removes them ({"queue","id","payload","due_ms","deliveries","read_ms","reason"}; a
missing payload is null), put back at the end on a failed write (exit 74).
--forever serves one item at a time with CMD (streams lines without) until
INT/TERM/HUP/QUIT, whenever it comes, then exits 0; with CMD a signal during a run is
forwarded to CMD and the service ends once that item is settled (systemd signals the
whole unit); Redis unavailable: retried every second.

Examples:
  rlock delay-pop reminders --wait 1m
  rlock delay-pop reminders --forever --count 100 >> due.jsonl
  rlock delay-pop jobs --forever --visibility 2m --max-deliveries 5 -- ./handle.sh
  rlock delay-pop jobs --dead --count 100)");
  return {[f, &command](const Settings& settings) {
    require_rlock_layout(settings, "delay-pop", kRedissonDelayedQueue);
    PopRequest r = resolve(*f, !command.empty());
    if (command.empty()) require_stdout(f->queue);
    if (f->dead) return run_dead(*f, r, settings);
    if (command.empty()) return run_take(*f, r, settings);
    return run_command(*f, r, command, settings);
  }};
}

}  // namespace rlock::cli
