#include <vector>

#include "cli/command.hpp"

namespace rlock::cli {

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> kAll = {
      {"lock", "Acquire (or re-enter) a lock, or several as one, and hold it for its lease",
       nullptr, define_lock_command},
      {"unlock", "Release one level of a lock (or of several) held by an owner", nullptr,
       define_unlock_command},
      {"exec", "Run a command while holding a lock (or several: all of them)",
       "rlock exec [OPTIONS] NAME... -- CMD [ARGS...]", define_exec_command},
      {"elect", "Campaign to lead NAME and run a command while leading, or --observe who leads",
       "rlock elect [OPTIONS] NAME [-- CMD [ARGS...]]", define_elect_command},
      {"sem", "Semaphores: take, give back, renew permits; run a command holding them",
       "rlock sem exec [OPTIONS] NAME -- CMD [ARGS...]", define_sem_command},
      {"inspect", "Show locks, semaphores, latches, limiters, queues: holders, leases, waiters",
       nullptr, define_inspect_command},
      {"latch", "Countdown latches: set, count-down, await, status", nullptr, define_latch_command},
      {"limit", "Rate limiters: decide one call (GCRA on the server clock), or run a command",
       "rlock limit [OPTIONS] NAME [-- CMD [ARGS...]]", define_limit_command},
      {"delay-push", "Schedule an item on a delayed queue (due after --delay or --at)", nullptr,
       define_delay_push_command},
      {"delay-pop", "Take due items of a delayed queue; with -- CMD, reliably (lease, ack)",
       "rlock delay-pop [OPTIONS] QUEUE [-- CMD [ARGS...]]", define_delay_pop_command},
      {"doctor", "Check whether the Redis deployment is fit for locks (one finding a line)",
       nullptr, define_doctor_command},
  };
  return kAll;
}

}  // namespace rlock::cli
