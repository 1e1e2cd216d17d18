#include "lossy_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <vector>

namespace rlock::test {
namespace {

Fd connect_to(int port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("proxy: cannot connect upstream");
  return fd;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

struct Flow {
  Fd client, server;
  std::optional<LossyProxy::Loss> losing;  // a request of this flow was forwarded to be lost
  std::string held;                        // kHeldReply: from the server, not yet delivered
};

}  // namespace

LossyProxy::LossyProxy(int upstream_port) : upstream_port_(upstream_port) {
  listener_ = listen_silently(&port_);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("proxy: pipe");
  stop_read_ = Fd(p[0]);
  stop_write_ = Fd(p[1]);
  thread_ = std::thread([this] { loop(); });
}

LossyProxy::~LossyProxy() {
  (void)!::write(stop_write_.get(), "x", 1);
  thread_.join();
}

void LossyProxy::lose(const std::string& marker, Loss loss, int times) {
  std::lock_guard<std::mutex> g(mu_);
  marker_ = marker;
  loss_ = loss;
  times_ = times;
}

void LossyProxy::cut(Cut how) {
  {
    std::lock_guard<std::mutex> g(mu_);
    cut_ = how;
  }
  (void)!::write(stop_write_.get(), "c", 1);  // the loop looks again at once
}

bool LossyProxy::held_contains(const std::string& marker) {
  std::lock_guard<std::mutex> g(mu_);
  return held_.find(marker) != std::string::npos;
}

int LossyProxy::release_held() {
  std::unique_lock<std::mutex> g(mu_);
  release_ = true;
  released_ = -1;
  (void)!::write(stop_write_.get(), "c", 1);
  released_cv_.wait(g, [&] { return released_ >= 0; });
  held_.clear();
  return released_;
}

void LossyProxy::loop() {
  std::vector<Flow> flows;
  std::vector<Fd> stalled;  // accepted while stalled: held open, never read
  char buf[65536];
  while (true) {
    Cut cut;
    {
      std::lock_guard<std::mutex> g(mu_);
      cut = cut_;
      if (release_) {
        int delivered = 0;
        for (auto& f : flows) {
          if (f.losing != Loss::kHeldReply) continue;
          if (write_all(f.client.get(), f.held.data(), f.held.size())) ++delivered;
          f.held.clear();
          f.losing.reset();
        }
        release_ = false;
        released_ = delivered;
        released_cv_.notify_all();
      }
    }
    if (cut == Cut::kDrop) flows.clear();
    if (cut != Cut::kStall) stalled.clear();
    std::vector<pollfd> fds = {{stop_read_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    if (cut == Cut::kNone) {
      for (auto& f : flows) {
        fds.push_back({f.client.get(), POLLIN, 0});
        fds.push_back({f.server.get(), POLLIN, 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[0].revents) {
      char what = 0;
      if (::read(stop_read_.get(), &what, 1) != 1 || what == 'x') return;
      continue;
    }
    if (fds[1].revents & POLLIN) {
      int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0 && cut == Cut::kNone) {
        flows.push_back({Fd(c), connect_to(upstream_port_), std::nullopt, {}});
      } else if (c >= 0 && cut == Cut::kStall) {
        stalled.emplace_back(c);
      } else if (c >= 0) {
        ::close(c);
      }
    }
    if (cut != Cut::kNone) continue;
    std::vector<bool> dead(flows.size(), false);
    for (size_t i = 0; i < flows.size(); ++i) {
      Flow& f = flows[i];
      if (fds[2 + 2 * i].revents) {  // from the client
        ssize_t n = ::read(f.client.get(), buf, sizeof buf);
        if (n <= 0) {
          dead[i] = true;
          continue;
        }
        std::optional<Loss> loss;
        {
          std::lock_guard<std::mutex> g(mu_);
          if (times_ > 0 && std::string_view(buf, static_cast<size_t>(n)).find(marker_) !=
                                std::string_view::npos) {
            --times_;
            loss = loss_;
          }
        }
        if (loss == Loss::kRequest) {
          ++losses_;
          dead[i] = true;
          continue;
        }
        if (loss) f.losing = loss;
        if (!f.losing || loss || f.losing == Loss::kHeldReply) {
          if (!write_all(f.server.get(), buf, static_cast<size_t>(n))) dead[i] = true;
        }
      }
      if (!dead[i] && fds[3 + 2 * i].revents) {  // from the server
        ssize_t n = ::read(f.server.get(), buf, sizeof buf);
        if (n <= 0) {
          dead[i] = true;
          continue;
        }
        if (f.losing == Loss::kReply) {
          // The server has answered (so it ran the request): only the reply is lost.
          ++losses_;
          dead[i] = true;
        } else if (f.losing == Loss::kHeldReply) {
          f.held.append(buf, static_cast<size_t>(n));
          std::lock_guard<std::mutex> g(mu_);
          held_.append(buf, static_cast<size_t>(n));
        } else if (f.losing == Loss::kStalledReply) {
          ++losses_;
          f.server.reset();  // nothing more goes through; the client waits in vain
        } else if (!write_all(f.client.get(), buf, static_cast<size_t>(n))) {
          dead[i] = true;
        }
      }
    }
    std::vector<Flow> kept;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (!dead[i]) kept.push_back(std::move(flows[i]));
    }
    flows = std::move(kept);
  }
}

}  // namespace rlock::test
