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

  // Passes until one succeeds or `until` passes (a failover under way: the sentinels still
  // name the old master, or the new one still says replica): each pass asks each sentinel
  // in turn (SENTINEL GET-MASTER-ADDR-BY-NAME), connects to the address it names and
  // returns that connection once ROLE says master. Everything, sentinels included, ends by
  // `until`: each sentinel of a pass gets an equal share of what is left, so that a frozen
  // one leaves time for the others, and an address that did not answer ROLE is not asked
  // again within the pass. Throws UnavailableError with one line saying what each sentinel
  // answered in the last pass.
  Connection connect_master(Deadline until);

  // The master's address as the sentinels name it now: the first answer of a sentinel,
  // asked in turn (the one that answered last first, each within an equal share of what is
  // left until `until`), without connecting to it. Throws UnavailableError when no sentinel
  // answers by then.
  Endpoint named_master(Deadline until);

  // The connect and command timeouts of the questions and connections from now on (its
  // endpoint is ignored), each bounded by the deadline of the call that uses them.
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
  // One pass of connect_master(until).
  Connection connect_master_once(Deadline until);
  // Puts the sentinel at `i` first: it is asked first next time.
  void prefer(size_t i);

  Target target_;
  ConnectOptions options_;
  Endpoint master_;
  // The connection to the sentinel asked last, kept for the next question (a long wait or
  // an exec's renewals ask again and again: one connection, not one per question).
  std::optional<Connection> sentinel_;
};

}  // namespace rlock::redis
