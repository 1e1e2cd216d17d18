// `sem` on Redisson's RSemaphore: the calls of its Java API that a shell can make. No
// permit is named, so nothing here claims a lease or prints an id; what rlock keeps beside
// Redisson's free count is only the reply records of prim/redisson_rsemaphore.cpp.
#include "cli/sem_rsem.hpp"

#include <optional>

#include "cli/console.hpp"
#include "cli/stop_signals.hpp"
#include "cli/wait_line.hpp"
#include "prim/redisson_semaphore.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

// The words that give anonymous permits back, for a line about permits still taken.
std::string release_command(const std::string& name, long long count) {
  return "rlock --layout redisson --redisson-object semaphore sem release " + shell_quote(name) +
         " --count " + std::to_string(count);
}

std::string permits(long long count) {
  return std::to_string(count) + (count == 1 ? " permit" : " permits");
}

prim::WaitHooks rsem_wait_hooks(const Console& console, const std::string& name) {
  prim::WaitHooks hooks;
  if (console.verbose()) {
    hooks.on_wait = [&console, name](const prim::Waitable::Step& busy, Millis left) {
      console.explain("waiting for semaphore '" + name + "' (" + busy.holders +
                      "); no queue: every release on redisson_sc:{" + name +
                      "} wakes every waiter; " +
                      (left > kMaxDuration / 2 ? std::string("no time limit")
                                               : "giving up in " + format_duration(left)));
    };
  }
  return WaitLine::attach(WaitLine::on_terminal(console.quiet(), "semaphore '" + name + "'"),
                          hooks);
}

}  // namespace

void check_rsem_flags(const RsemGiven& g) {
  const std::string on = " with --redisson-object semaphore: Redisson's RSemaphore ";
  const std::string give_back = "; give permits back with sem release NAME --count K";
  if (g.renew)
    throw UsageError("sem renew is refused" + on +
                     "permits never expire, so there is no lease to renew");
  if (g.resize)
    throw UsageError("--resize is refused" + on +
                     "keeps no total to resize (--permits only sets one never set)");
  if (g.acquire && g.lease)
    throw UsageError("--lease is refused for sem acquire" + on +
                     "permits never expire: they stay taken until sem release NAME --count K");
  if (g.force)
    throw UsageError("sem release --force is refused" + on +
                     "records no holder, so rlock cannot tell what was taken" + give_back);
  if (g.ids)
    throw UsageError("--permit is refused" + on + "permits are anonymous (no ids)" + give_back);
  if (g.paging)
    throw UsageError("--limit and --after are refused" + on +
                     "keeps no permits or waiters to page through (status prints its free count)");
}

int run_rsem_acquire(const LockRequest& lock, long long count, long long capacity,
                     const Settings& settings) {
  Console console(settings);
  // As `lock`: only a wait takes the stop signals.
  std::optional<StopSignals> stops;
  if (lock.wait.count() > 0) stops.emplace();
  redis::Topology topology = open_topology(settings);
  prim::RedissonSemaphore sem(topology, lock.name, settings.prefix, true);
  prim::WaitHooks hooks = rsem_wait_hooks(console, lock.name);
  if (stops) hooks = stops->attach(std::move(hooks));
  const prim::AnonymousPermits a = sem.take_anonymous(count, capacity, lock.wait_until, hooks);
  if (int signo = stops ? stops->stop_signal() : 0) {  // while connecting, waiting, or at the grant
    if (a.taken) sem.give_anonymous(count);
    console.notice("interrupted by signal " + std::to_string(signo) +
                   " while waiting for semaphore '" + lock.name + "'; no permit is taken");
    return 128 + signo;
  }
  if (!a.taken) {
    console.result({{"name", lock.name}, {"acquired", false}, {"count", count}, {"free", a.free}});
    return lock.conflict_exit_code;
  }
  console.result(
      {{"name", lock.name}, {"acquired", true}, {"count", count}, {"free", a.free}},
      "semaphore '" + lock.name + "': " + permits(count) + (count == 1 ? " is" : " are") +
          " taken all the same (Redisson's RSemaphore: no expiry); give " +
          (count == 1 ? "it" : "them") + " back with: " + release_command(lock.name, count));
  return 0;
}

int run_rsem_release(const std::string& name, long long count, const Settings& settings) {
  Console console(settings);
  validate_name(name);
  redis::Topology topology = open_topology(settings);
  prim::RedissonSemaphore sem(topology, name, settings.prefix, true);
  const long long free = sem.give_anonymous(count);
  console.result({{"name", name}, {"released", count}, {"free", free}},
                 "semaphore '" + name + "': " + permits(count) + " given back all the same (" +
                     std::to_string(free) + " free now)");
  return 0;
}

int run_rsem_status(const std::string& name, const Settings& settings) {
  Console console(settings);
  validate_name(name);
  redis::Topology topology = open_topology(settings);
  prim::RedissonSemaphore sem(topology, name, settings.prefix, true);
  const std::optional<long long> free = sem.free_anonymous();
  // Redisson keeps the free count alone: the total and the permits taken are nobody's.
  console.result({{"name", name},
                  {"exists", free.has_value()},
                  {"capacity", nullptr},
                  {"in_use", nullptr},
                  {"free", free.value_or(0)}});
  return 0;
}

}  // namespace rlock::cli
