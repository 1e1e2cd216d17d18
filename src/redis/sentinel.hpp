#pragma once

#include <optional>
#include <string>
#include <vector>

#include "redis/connection.hpp"
#include "redis/url.hpp"
#include "util/clock.hpp"

namespace rlock::redis {

// What a server says it is (ROLE).
enum class Role { kMaster, kReplica, kSentinel, kUnknown };

// Asks the server `conn` is connected to for its ROLE. Throws what the connection throws.
Role role_of(Connection& conn);

// Finds the current master of a Sentinel deployment and connects to it. It trusts no
// address without ROLE: a demoted master stays writable for a while after a failover, and
// a master restarted empty says "master" until a sentinel converts it, so the address comes
// from a sentinel every time and ROLE confirms it. The sentinel that answered last is
// asked first next time. Move-only in effect (it is cheap to keep, one per Topology).
class SentinelResolver {
 public:
  // `target` is a redis-sentinel:// target (see parse_target); the sentinels get
  // target.sentinel_user/sentinel_password, the master target.endpoint's credentials and
  // database. `options` gives the connect and command timeouts (its endpoint is ignored).
  SentinelResolver(Target target, const ConnectOptions& options);

  // One pass: asks each sentinel in turn (SENTINEL GET-MASTER-ADDR-BY-NAME), connects to
  // the address it names and returns that connection once ROLE says master. Throws
  // UnavailableError with one line saying what each sentinel answered when none led to a
  // confirmed master.
  Connection connect_master();
  // Passes of connect_master() until one succeeds or `until` passes (a failover under way:
  // the sentinels still name the old master, or the new one still says replica); throws the
  // last pass's error then.
  Connection connect_master(Deadline until);

  // The master's address as the sentinels name it now: the first answer of a sentinel,
  // asked in turn (the one that answered last first), without connecting to it. Throws
  // UnavailableError when no sentinel answers.
  Endpoint named_master();

  // The connect and command timeouts of the questions and connections from now on (its
  // endpoint is ignored): a renewal near its stop point has less time than the request
  // that made this resolver.
  void set_timeouts(const ConnectOptions& options) {
    options_.connect_timeout = options.connect_timeout;
    options_.command_timeout = options.command_timeout;
  }

  // The master's address as the last successful pass found it (for messages).
  const Endpoint& master() const { return master_; }
  const Target& target() const { return target_; }

 private:
  // The master's address according to one sentinel, asked within `options`' timeouts;
  // throws with what went wrong.
  Endpoint ask(const Endpoint& sentinel, const ConnectOptions& options);

  Target target_;
  ConnectOptions options_;
  Endpoint master_;
  // The connection to the sentinel asked last, kept for the next question (a long wait or
  // an exec's renewals ask again and again: one connection, not one per question).
  std::optional<Connection> sentinel_;
};

}  // namespace rlock::redis
