#pragma once

#include <memory>
#include <string>

#include "redis/dispatch.hpp"
#include "redis/router.hpp"

namespace rlock::redis {

// Every request to the one server that serves its key, as its Router names it: a
// standalone server, Sentinel's master, a Cluster's node. Redirects and failovers are
// followed, I/O errors retried (see Topology::run).
class RoutedDispatch : public Dispatch {
 public:
  // `replicated`: the URL names a Sentinel deployment or a Cluster.
  RoutedDispatch(std::unique_ptr<Router> router, ConnectOptions options, bool replicated);

  Reply run(const Script& script, const std::vector<std::string_view>& keys,
            const std::vector<std::string_view>& args, Retry retry, std::optional<Deadline> until,
            const std::vector<std::string_view>* resend_args) override;
  Synced run_synced(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry, std::string_view about,
                    bool judged_by_reply,
                    const std::vector<std::string_view>* resend_args) override;
  Reply command(const std::vector<std::string_view>& argv, Retry retry) override;
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands, Retry retry,
                              std::string_view key) override;
  void send(const std::vector<std::vector<std::string>>& commands) override;
  std::vector<Reply> receive(size_t replies) override;
  Subscriber subscribe(const std::vector<std::string>& channels,
                       const std::vector<std::string>& classic) override;
  std::optional<Subscriber> subscribe_pattern(const std::string& pattern) override;
  void for_each_master(Topology& self, const std::function<void(Topology&)>& fn) override;
  bool send_cleanup(const Script& script, const std::vector<std::string>& keys,
                    const std::vector<std::string>& args, Millis patience) noexcept override;
  bool replicated() const override { return replicated_ || router_->cluster(); }
  std::string server_name() override;
  std::optional<std::chrono::system_clock::time_point> server_certificate_expiry() override;

 private:
  // One request's tries, redirects and budget (see with_retry).
  struct Attempts {
    Deadline start, end;
    Connection* ask = nullptr;  // the next try goes there, with ASKING
    int redirects = 0;
    int tries = 1;
    // The server that did not answer (a cluster node, the master Sentinel named), not the
    // URL's first host.
    std::string where;
  };
  // The connection to the server of `key`, opened (or reopened) within `budget` when
  // needed, with `timeout` as its command timeout.
  Connection& connection(std::string_view key, Millis budget, Millis timeout);
  // Runs `attempt(connection, asking)` on the server of `key` within the request's budget:
  // redirects and failovers (Router::after_error) are followed, and I/O errors retried as
  // Topology::run says.
  // `extra`: time beyond --timeout the request may take (a WAIT behind it), added to the
  // budget and to each attempt's socket timeout.
  // `confirm`: the request is a script whose write counts only once the router confirms
  // its server after the reply (Router::confirm_master).
  template <typename F>
  auto with_retry(std::string_view key, Retry retry, std::optional<Deadline> until, F&& attempt,
                  Millis extra = Millis(0), bool confirm = false);
  // One try of with_retry on the connection it goes to; `wait` is this try's share.
  template <typename F>
  auto try_once(std::string_view key, Attempts& a, Millis left, Millis wait, F& attempt);
  // From here on the request goes out on another connection than its first send: it is
  // judged as a reconnected request (see resend_args in Topology::run).
  void resend();
  // False (the request goes again) when the router no longer names `used`'s server for the
  // write it took; throws UnavailableError when no time is left for that.
  bool confirmed(const Connection& used, Attempts& a);
  // After the error reply `e`: the request follows the redirect, or `e` is rethrown.
  void follow(std::string_view key, const ReplyError& e, Attempts& a);
  // After the I/O error `e` of a try: another try, or the error is rethrown.
  void after_io_error(const IoError& e, Attempts& a, bool last);
  // ROLE on `c` once: the replicas its master has online, for --sync-replicas.
  long long replicas_online(Connection& c);
  // `sub`, opened on `server`, asking the router whether that still serves its channels as
  // often as the router says (Router::recheck_every).
  Subscriber rechecked(Subscriber sub, const Endpoint& server);
  // subscribe() for channels of one hash tag (one slot), on that slot's server.
  Subscriber subscribe_one_tag(const std::vector<std::string>& channels,
                               const std::vector<std::string>& classic);

  std::unique_ptr<Router> router_;
  bool replicated_ = false;  // a Sentinel or Cluster URL
  bool resending_ = false;   // the current request went out on another connection
};

}  // namespace rlock::redis
