// Jobs that stamp their start and end into one log, for the failover and partition tests:
// every job appends "start FENCE NS WHO" and "end FENCE NS WHO" (NS: the host's realtime
// clock in ns); a job stopped by rlock writes its end from a TERM trap. "Never both
// running" is: sorted by start, no job starts before the previous one ended.
#pragma once

#include <string>
#include <vector>

#include "deployments.hpp"

namespace rlock::test {

// rlock --url URL ARGS... in the background (-v with RLOCK_FAILOVER_VERBOSE set).
Spawned spawn_on(const std::string& url, std::vector<std::string> args);
// rlock --url URL ARGS..., to its end.
RunResult on(const std::string& url, std::vector<std::string> args);
long long now_ns();

// `exec` args of a job named `who` that stamps its start and end into `log` around `body`
// (a shell command); TERM ends it with an end stamp.
std::vector<std::string> stamped(std::vector<std::string> exec_args, const std::string& log,
                                 const std::string& who, const std::string& body);

struct Job {
  std::string who;
  long long fence = 0;
  long long start_ns = 0;
  long long end_ns = 0;  // 0: no end stamp (yet)
};

// The jobs of `log` in start order.
std::vector<Job> jobs_of(const std::string& log);
const Job* job_named(const std::vector<Job>& jobs, const std::string& who);
bool started(const std::string& log, const std::string& who);
// Every job ended, none started before the one before it ended, and the fences rise in
// start order: what "never both running" and "fences never go backwards" mean.
void check_serial(const std::string& log);
long long max_fence(const std::string& log);

long long fence_on(const RedisServer& server, const std::string& name);
void touch(const std::string& path);
// Waiters in the queue of lock `name` on `server`.
long long queued(const RedisServer& server, const std::string& name);
// Why a process ended as it did, for failure messages.
std::string report(Spawned& p, const std::string& who);

// SENTINEL FAILOVER to `next` without SentinelSetup::failover's settle() first (which would
// attach a detached replica again); returns once the sentinels all name `next` and its ROLE
// says master.
void failover_to(SentinelSetup& sentinel, RedisServer& next);

}  // namespace rlock::test
