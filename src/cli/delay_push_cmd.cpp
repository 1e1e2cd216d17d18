#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/flag_options.hpp"
#include "prim/delay_queue.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"
#include "util/owner.hpp"
#include "util/timestamp.hpp"

namespace rlock::cli {
namespace {

constexpr long long kDefaultMaxPayload = 1024 * 1024;
// Items per pipelined round trip with --lines: large enough to amortise the round trip,
// small enough to keep memory bounded and progress visible.
constexpr size_t kLinesBatch = 512;

struct PushFlags {
  std::string queue;
  std::optional<std::string> payload;
  std::optional<std::string> delay;
  std::optional<std::string> at;
  std::optional<std::string> id;
  bool lines = false;
  std::string max_payload = "1MiB";
};

// "1048576", "512KiB", "1MiB", "2M", "64k" (binary multiples) -> bytes.
long long parse_size(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  long long mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  if (unit == "k" || unit == "kb" || unit == "kib") mult = 1024;
  if (unit == "m" || unit == "mb" || unit == "mib") mult = 1024 * 1024;
  if (end == text.c_str() || mult == 0 || errno != 0 || !(v >= 1) || v * mult > 512.0 * 1024 * 1024)
    throw UsageError("--max-payload: '" + text +
                     "' is not a size from 1 byte to 512MiB (e.g. 65536, 64KiB, 1MiB)");
  return static_cast<long long>(v * mult);
}

prim::DueTime resolve_due(const PushFlags& f) {
  if (f.delay && f.at) throw UsageError("give either --delay or --at, not both");
  if (!f.delay && !f.at) throw UsageError("delay-push needs --delay DUR or --at TIME");
  if (f.at) return {true, parse_timestamp(*f.at, "--at")};
  return {false, parse_duration(*f.delay, "--delay").count()};
}

void check_size(const std::string& payload, long long max) {
  if (static_cast<long long>(payload.size()) > max) {
    throw DataError("payload of " + std::to_string(payload.size()) +
                    " bytes is over --max-payload " + std::to_string(max) +
                    " bytes; nothing pushed");
  }
}

// All of stdin, refusing more than `max` bytes without reading further.
std::string read_stdin(long long max) {
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    out.append(buf, n);
    if (static_cast<long long>(out.size()) > max) check_size(out, max);
  }
  if (std::ferror(stdin)) throw Error(kExitInternal, "could not read the payload from stdin");
  return out;
}

Json pushed_json(const std::string& queue, const prim::Pushed& p) {
  return {{"queue", queue}, {"id", p.id}, {"due_ms", p.due_ms}, {"duplicate", p.duplicate}};
}

// What stands when the lines of `r` could not be printed: the items are queued, and their
// ids (the first and last of a long batch, numbered by line with --lines --id) say which.
std::string queued_line(const std::string& queue, const std::vector<prim::Pushed>& r) {
  if (r.empty()) return {};
  std::string ids = "'" + r.front().id + "'";
  if (r.size() == 2) ids += ", '" + r.back().id + "'";
  if (r.size() > 2) ids += " ... '" + r.back().id + "'";
  return (r.size() == 1 ? "the item is" : "the " + std::to_string(r.size()) + " items are") +
         " queued all the same on queue '" + queue + "' (" + (r.size() == 1 ? "id " : "ids ") +
         ids + ")";
}

void print(const Console& console, const std::string& queue, const std::vector<prim::Pushed>& r) {
  std::string text;
  for (const auto& p : r) text += pushed_json(queue, p).dump() + "\n";
  console.result_text(text, queued_line(queue, r));
}

// --lines: one item per stdin line (without its '\n'), pushed kLinesBatch at a time. With
// --id ID the items are ID.1, ID.2, ... by line number, so a re-run after a failure pushes
// only what is missing.
int push_lines(const PushFlags& f, const Console& console, prim::DelayQueue& q, prim::DueTime due,
               long long max) {
  char* line = nullptr;
  size_t cap = 0;
  long long number = 0;
  std::vector<prim::QueuePush> batch;
  auto flush = [&] {
    if (batch.empty()) return;
    print(console, f.queue, q.push(batch, due));
    batch.clear();
  };
  try {
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
      std::string payload(line, static_cast<size_t>(n));
      if (!payload.empty() && payload.back() == '\n') payload.pop_back();
      ++number;
      if (static_cast<long long>(payload.size()) > max) {
        flush();
        throw DataError("line " + std::to_string(number) + " is " + std::to_string(payload.size()) +
                        " bytes, over --max-payload " + std::to_string(max) +
                        "; the lines before it were pushed, nothing after it");
      }
      batch.push_back(
          {f.id ? *f.id + "." + std::to_string(number) : random_hex(16), std::move(payload)});
      if (batch.size() >= kLinesBatch) flush();
    }
    flush();
  } catch (...) {
    std::free(line);
    throw;
  }
  std::free(line);
  return 0;
}

int run_push(const PushFlags& f, const Settings& settings) {
  Console console(settings);
  validate_name(f.queue);
  if (f.id) validate_participant_id(*f.id);
  prim::DueTime due = resolve_due(f);
  long long max = parse_size(f.max_payload);
  if (f.lines && f.payload && *f.payload != "-")
    throw UsageError("--lines reads the items from stdin: give no PAYLOAD (or -)");
  if (!f.lines && !f.payload)
    throw UsageError("delay-push needs a PAYLOAD, - (read it from stdin) or --lines");
  std::string payload;
  if (!f.lines) {
    payload = *f.payload == "-" ? read_stdin(max) : *f.payload;
    check_size(payload, max);
  }
  redis::Topology topology = open_topology(settings);
  prim::KeyLayout layout(settings.prefix);
  prim::DelayQueue q(topology, layout, f.queue);
  if (f.lines) return push_lines(f, console, q, due, max);
  print(console, f.queue, q.push({{f.id.value_or(random_hex(16)), std::move(payload)}}, due));
  return 0;
}

}  // namespace

Runner define_delay_push_command(CLI::App& app, std::vector<std::string>& /*command*/) {
  auto f = std::make_shared<PushFlags>();
  add_table_option(app, "queue", f->queue)->required();
  add_table_option(app, "payload", f->payload);
  auto* delay = add_table_option(app, "--delay", f->delay);
  add_table_option(app, "--at", f->at)->excludes(delay);
  add_table_option(app, "--id", f->id);
  add_table_flag(app, "--lines", f->lines);
  add_table_option(app, "--max-payload", f->max_payload);
  app.footer(R"(Schedules an item on a delayed queue, due on the Redis server's clock: --delay after
the server's time at the push, or --at an absolute time (RFC 3339 with Z or an offset, or
Unix seconds, fractions allowed). The payload is bytes, stored as given. Prints one JSON
line per item: {"queue","id","due_ms","duplicate"}. An --id already in the queue
(scheduled, in flight or dead) changes nothing and prints "duplicate":true with the stored
due time; once the item is consumed the id may be used again. --lines pushes one item per
stdin line (the '\n' removed), 512 per round trip, and prints one line per item; with
--id ID the items are ID.1, ID.2, ... by line number, so re-running a failed bulk push
adds only what is missing. A payload over --max-payload (default 1MiB) exits 65, nothing
pushed (with --lines, the batches before the line were pushed). Consume with delay-pop.

Examples:
  rlock delay-push reminders --delay 15m 'send the report'
  rlock delay-push reminders --at 2026-11-22T10:00:00Z --id invoice-42 - < invoice.json
  rlock delay-push reminders --at 1795341600.5 'at a Unix time'
  seq 100000 | rlock delay-push bulk --delay 30s --lines --id import-7)");
  return {[f](const Settings& settings) {
    require_rlock_layout(settings, "delay-push", kRedissonDelayedQueue);
    return run_push(*f, settings);
  }};
}

}  // namespace rlock::cli
