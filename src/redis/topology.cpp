#include "redis/topology.hpp"

#include <utility>

namespace rlock::redis {

Topology::Topology(ConnectOptions options)
    : Topology(Target{Deployment::kStandalone, options.endpoint, {}, {}, {}, {}}, options) {}

Topology::Topology(const Target& target, ConnectOptions options,
                   std::function<void(const std::string&)> notice)
    : target_(target), dispatch_(make_dispatch(target, options, std::move(notice))) {}

Topology::~Topology() = default;

std::vector<Endpoint> Topology::quorum_members() const { return dispatch_->members(); }

std::vector<std::string> Topology::silent_quorum_members() { return dispatch_->silent_members(); }

bool Topology::replicated() const { return dispatch_->replicated(); }

std::string Topology::server_name() { return dispatch_->server_name(); }

std::optional<std::chrono::system_clock::time_point> Topology::server_certificate_expiry() {
  return dispatch_->server_certificate_expiry();
}

Topology::Sentinels Topology::sentinels() const {
  Sentinels out;
  if (target_.kind != Deployment::kSentinel) return out;
  out.master_name = target_.master_name;
  for (const Endpoint& sentinel : target_.seeds) {
    // As SentinelResolver reaches them: their own credentials, no database.
    ConnectOptions o = dispatch_->effective_options();
    o.endpoint = sentinel;
    o.endpoint.user = target_.sentinel_user;
    o.endpoint.password = target_.sentinel_password;
    o.endpoint.db = 0;
    out.each.push_back(std::move(o));
  }
  return out;
}

Deadline Topology::cleanup_until() const { return dispatch_->cleanup_until(); }

void Topology::retire(Subscriber subscriber) { retired_.push_back(std::move(subscriber)); }

void Topology::close_retired() {
  auto work = std::move(after_start_);
  after_start_.clear();
  for (auto& w : work) w();
  retired_.clear();
}

void Topology::after_start(std::function<void()> work) { after_start_.push_back(std::move(work)); }

void Topology::limit_timeout(Millis timeout) { dispatch_->limit_timeout(timeout); }

Reply Topology::run(const Script& script, const std::vector<std::string_view>& keys,
                    const std::vector<std::string_view>& args, Retry retry,
                    std::optional<Deadline> until,
                    const std::vector<std::string_view>* resend_args) {
  return dispatch_->run(script, keys, args, retry, until, resend_args);
}

Synced Topology::run_synced(const Script& script, const std::vector<std::string_view>& keys,
                            const std::vector<std::string_view>& args, Retry retry,
                            std::string_view about, bool judged_by_reply,
                            const std::vector<std::string_view>* resend_args) {
  return dispatch_->run_synced(script, keys, args, retry, about, judged_by_reply, resend_args);
}

Reply Topology::command(const std::vector<std::string_view>& argv, Retry retry) {
  return dispatch_->command(argv, retry);
}

std::vector<Reply> Topology::pipeline(const std::vector<std::vector<std::string>>& commands,
                                      Retry retry, std::string_view key) {
  return dispatch_->pipeline(commands, retry, key);
}

void Topology::send(const std::vector<std::vector<std::string>>& commands) {
  dispatch_->send(commands);
}

std::vector<Reply> Topology::receive(size_t replies) { return dispatch_->receive(replies); }

Subscriber Topology::subscribe(const std::vector<std::string>& channels,
                               const std::vector<std::string>& classic) {
  return dispatch_->subscribe(channels, classic);
}

std::optional<Subscriber> Topology::subscribe_pattern(const std::string& pattern) {
  return dispatch_->subscribe_pattern(pattern);
}

void Topology::for_each_master(const std::function<void(Topology&)>& fn) {
  dispatch_->for_each_master(*this, fn);
}

bool Topology::send_cleanup(const Script& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args, Millis patience) noexcept {
  return dispatch_->send_cleanup(script, keys, args, patience);
}

}  // namespace rlock::redis
