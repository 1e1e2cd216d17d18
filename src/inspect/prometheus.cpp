#include "inspect/prometheus.hpp"

#include <array>
#include <cstdint>

#include "util/utf8.hpp"

namespace rlock::inspect {
namespace {

// Per family: enough for about a thousand samples before the spool goes to disk; with
// every family full, about 1 MiB.
constexpr size_t kSpoolMemory = 64 * 1024;

enum Family : size_t {
  kLockHeld,
  kLockHolders,
  kLockWaiters,
  kLockLease,
  kLockOldestWaiter,
  kSemInUse,
  kSemCapacity,
  kSemWaiters,
  kLatchCount,
  kQueueItems,
  kQueueNextDue,
  kLimiterTokens,
  kLimiterBurst,
  kLastRunStatus,
  kLastRunEnd,
  kUnreadable,
  kFamilies,
};

struct FamilyInfo {
  const char* name;
  const char* help;
};

// Every family is a gauge: each value is the state at the listing's time.
constexpr std::array<FamilyInfo, kFamilies> kFamilyInfo = {{
    {"rlock_lock_held", "Whether the lock is held (1), by mode (exclusive or shared)."},
    {"rlock_lock_holders", "Holders of the lock: 1 for a writer, the readers of a shared lock."},
    {"rlock_lock_waiters", "Waiters queued for the lock."},
    {"rlock_lock_lease_remaining_seconds",
     "Time left before the lock's lease ends (a shared lock: its longest reader's)."},
    {"rlock_lock_oldest_waiter_age_seconds",
     "How long the first waiter in the lock's queue has waited, by the server's clock."},
    {"rlock_semaphore_permits_in_use", "Permits of the semaphore held now."},
    {"rlock_semaphore_capacity", "Permits the semaphore has (its stored --permits)."},
    {"rlock_semaphore_waiters", "Requests queued for permits of the semaphore."},
    {"rlock_latch_count", "What is left of the countdown latch's count."},
    {"rlock_queue_items",
     "Items of the delayed queue by state: delayed (not due yet), due (not taken yet), "
     "leased (taken, in flight), dead (dead letters)."},
    {"rlock_queue_next_due_timestamp_seconds",
     "When the earliest scheduled item of the delayed queue is due, in Unix seconds of the "
     "server's clock."},
    {"rlock_limiter_tokens", "Calls of cost 1 the rate limiter's overall bucket lets through now."},
    {"rlock_limiter_burst", "The rate limiter's burst: its tokens when full."},
    {"rlock_last_run_exit_status",
     "Exit status of the newest exec --once-per run of the name that ended (-1: lost, its hold "
     "ended before the job; skipped and running runs are passed over)."},
    {"rlock_last_run_end_timestamp_seconds",
     "When that run ended, in Unix seconds of the server's clock (absent for a lost run "
     "whose end was never recorded)."},
    {"rlock_object_unreadable",
     "An object inspect found but could not read as its type (another program's data, an "
     "ACL refusal); it has no other samples."},
}};

std::string whole(long long n) { return std::to_string(n); }

bool has_number(const Json& j, const char* field) {
  return j.contains(field) && j[field].is_number();
}

long long number(const Json& j, const char* field) { return j[field].get<long long>(); }

}  // namespace

std::string prometheus_label_value(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    size_t n = utf8_length(raw, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (raw[i] == '\\') {
      out += "\\\\";
    } else if (raw[i] == '"') {
      out += "\\\"";
    } else if (raw[i] == '\n') {
      out += "\\n";
    } else {
      out.append(raw.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string prometheus_seconds(long long ms) {
  const auto magnitude = static_cast<std::uint64_t>(ms);
  const std::uint64_t abs = ms < 0 ? 0 - magnitude : magnitude;  // defined for LLONG_MIN too
  std::string out = (ms < 0 ? "-" : "") + std::to_string(abs / 1000);
  if (auto frac = abs % 1000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out;
}

PrometheusWriter::PrometheusWriter() {
  spools_.reserve(kFamilies);
  for (size_t f = 0; f < kFamilies; ++f) spools_.emplace_back(kSpoolMemory);
}

void PrometheusWriter::sample(size_t family, const std::string& labels, const std::string& value) {
  spools_[family].append(std::string(kFamilyInfo[family].name) + "{" + labels + "} " + value +
                         "\n");
}

void PrometheusWriter::batch(const std::vector<Shown>& shown) {
  for (const auto& s : shown) {
    const Json& j = s.decoded.json;
    const std::string name = "name=\"" + prometheus_label_value(s.name) + "\"";
    const std::string type(s.type->type());
    if (j.contains("error")) {
      sample(kUnreadable, "type=\"" + prometheus_label_value(type) + "\"," + name, "1");
    } else if (type == "lock") {
      lock(j, name);
    } else if (type == "sem") {
      sem(j, name);
    } else if (type == "latch") {
      if (has_number(j, "count")) sample(kLatchCount, name, whole(number(j, "count")));
    } else if (type == "queue") {
      queue(j, name);
    } else if (type == "limiter") {
      limiter(j, name);
    } else if (type == "runs") {
      runs(j, name);
    }
  }
}

void PrometheusWriter::lock(const Json& j, const std::string& name) {
  const long long holders = number(j, "holders_total");
  sample(kLockHeld, name + ",mode=\"" + j["mode"].get<std::string>() + "\"",
         holders > 0 ? "1" : "0");
  sample(kLockHolders, name, whole(holders));
  sample(kLockWaiters, name, whole(number(j, "waiters_total")));
  if (number(j, "ttl_ms") >= 0) sample(kLockLease, name, prometheus_seconds(number(j, "ttl_ms")));
  // Waiters are listed in queue order, that is by arrival: the first waited longest.
  const Json& waiters = j["waiters"];
  if (!waiters.empty() && has_number(waiters[0], "waited_ms"))
    sample(kLockOldestWaiter, name, prometheus_seconds(number(waiters[0], "waited_ms")));
}

void PrometheusWriter::sem(const Json& j, const std::string& name) {
  // Redisson's RSemaphore counts neither the permits taken nor its waiters (null): no sample.
  if (has_number(j, "permits_total")) sample(kSemInUse, name, whole(number(j, "permits_total")));
  if (has_number(j, "capacity")) sample(kSemCapacity, name, whole(number(j, "capacity")));
  if (has_number(j, "waiters_total")) sample(kSemWaiters, name, whole(number(j, "waiters_total")));
}

void PrometheusWriter::queue(const Json& j, const std::string& name) {
  // "scheduled" counts the due items too; the states are disjoint so that they sum up.
  const long long scheduled = number(j, "scheduled"), due = number(j, "due");
  sample(kQueueItems, name + ",state=\"delayed\"", whole(std::max(0LL, scheduled - due)));
  sample(kQueueItems, name + ",state=\"due\"", whole(due));
  sample(kQueueItems, name + ",state=\"leased\"", whole(number(j, "in_flight_total")));
  sample(kQueueItems, name + ",state=\"dead\"", whole(number(j, "dead")));
  if (has_number(j, "next_due_ms"))
    sample(kQueueNextDue, name, prometheus_seconds(number(j, "next_due_ms")));
}

void PrometheusWriter::limiter(const Json& j, const std::string& name) {
  if (has_number(j, "tokens")) sample(kLimiterTokens, name, whole(number(j, "tokens")));
  if (has_number(j, "burst")) sample(kLimiterBurst, name, whole(number(j, "burst")));
}

void PrometheusWriter::runs(const Json& j, const std::string& name) {
  for (const auto& run : j["runs"]) {
    const std::string status = run["status"].is_string() ? run["status"].get<std::string>() : "";
    if (status != "exited" && status != "lost") continue;
    sample(kLastRunStatus, name,
           status == "exited" && has_number(run, "exit_code") ? whole(number(run, "exit_code"))
                                                              : "-1");
    if (has_number(run, "ended_ms"))
      sample(kLastRunEnd, name, prometheus_seconds(number(run, "ended_ms")));
    return;
  }
}

void PrometheusWriter::finish(const std::function<void(const std::string&)>& out) {
  for (size_t f = 0; f < kFamilies; ++f) {
    if (spools_[f].empty()) continue;
    const std::string family = kFamilyInfo[f].name;
    out("# HELP " + family + " " + kFamilyInfo[f].help + "\n# TYPE " + family + " gauge\n");
    spools_[f].drain(out);
  }
}

}  // namespace rlock::inspect
