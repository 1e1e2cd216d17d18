#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "redis/retry.hpp"
#include "redis/script.hpp"
#include "redis/subscriber.hpp"
#include "redis/url.hpp"

namespace rlock::redis {

class Topology;

// What a clean-up's connection may take beyond the budget of the request it cleans up
// after: --timeout bounds a request, its retries and its clean-up together, plus this.
inline constexpr Millis kCleanupMargin{200};

// What the replicas said about a write sent with Topology::run_synced.
struct Acks {
  // Given by the caller: what the write is for ("lock 'x'"), named first in the
  // ReplicationError run_synced throws when too few replicas are online.
  std::string about;
  // Given by the caller: the write may take nothing (a wait's attempt once it is queued),
  // and only what its reply says it took is judged: a master with fewer than `wanted`
  // replicas online does not refuse it (the WAIT behind it then comes back short).
  bool judged_by_reply = false;
  int wanted = 0;            // --sync-replicas; 0 = off (nothing was asked)
  long long acked = 0;       // replicas that acknowledged it within `within`
  long long connected = -1;  // replicas the master had online (ROLE); -1 = unknown
  Millis within{0};          // the WAIT's timeout
  std::string master;        // the server that took the write
  std::string wait_error;    // WAIT's error reply, if it failed
  // True when replicas were asked for and fewer acknowledged.
  bool short_of_wanted() const { return wanted > 0 && acked < wanted; }
  // "0 of 1 connected replicas of redis at H:P acknowledged within 500ms (--sync-replicas 1)"
  std::string describe() const;
};

// A script's reply and its acknowledgement.
struct Synced {
  Reply reply;
  Acks acks;
};

// How a Topology's requests reach its servers: through a Router to the one server of a
// hash tag (a standalone server, Sentinel, a Cluster: RoutedDispatch), or to every member
// of a quorum at once (Quorum). Each method is the Topology method of the same name, whose
// comment gives the contract; this class keeps the request budget both share.
class Dispatch {
 public:
  explicit Dispatch(ConnectOptions options) : options_(std::move(options)) {}
  virtual ~Dispatch() = default;
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;

  virtual Reply run(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry,
                    std::optional<Deadline> until,
                    const std::vector<std::string_view>* resend_args) = 0;
  virtual Synced run_synced(const Script& script, const std::vector<std::string_view>& keys,
                            const std::vector<std::string_view>& args, Retry retry,
                            std::string_view about, bool judged_by_reply,
                            const std::vector<std::string_view>* resend_args) = 0;
  virtual Reply command(const std::vector<std::string_view>& argv, Retry retry) = 0;
  virtual std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands,
                                      Retry retry, std::string_view key) = 0;
  virtual void send(const std::vector<std::vector<std::string>>& commands) = 0;
  virtual std::vector<Reply> receive(size_t replies) = 0;
  virtual Subscriber subscribe(const std::vector<std::string>& channels,
                               const std::vector<std::string>& classic) = 0;
  virtual std::optional<Subscriber> subscribe_pattern(const std::string& pattern) = 0;
  // `self`: the topology this dispatch serves (what a single server's visit gets).
  virtual void for_each_master(Topology& self, const std::function<void(Topology&)>& fn) = 0;
  virtual bool send_cleanup(const Script& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args, Millis patience) noexcept = 0;
  virtual bool replicated() const = 0;
  virtual Millis drift(Millis /*lease*/) const { return Millis(0); }
  virtual std::vector<Endpoint> members() const { return {}; }
  virtual std::vector<std::string> silent_members() { return {}; }
  virtual std::string server_name() = 0;
  virtual std::optional<std::chrono::system_clock::time_point> server_certificate_expiry() = 0;

  unsigned long long resends() const { return resends_; }
  Deadline cleanup_until() const;
  void limit_timeout(Millis timeout) { timeout_limit_ = timeout; }
  void while_next_script_runs(std::function<void()> work) { in_flight_ = std::move(work); }
  const ConnectOptions& options() const { return options_; }
  // The options with the command timeout in force (see limit_timeout).
  ConnectOptions effective_options() const;

 protected:
  Millis request_timeout() const;

  ConnectOptions options_;
  Millis timeout_limit_{0};
  std::function<void()> in_flight_;
  std::optional<Deadline> failed_until_;  // the budget's end of the request that failed last
  unsigned long long resends_ = 0;        // see Topology::resends()
};

// The dispatch for `target` (see parse_target); `notice` as for make_router.
std::unique_ptr<Dispatch> make_dispatch(const Target& target, const ConnectOptions& options,
                                        std::function<void(const std::string&)> notice);

}  // namespace rlock::redis
