// A loopback TCP proxy in front of a real redis-server that loses requests or replies on
// demand: how a reply is lost for real (a dropped connection, a dead flow), with no mock
// on either side.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "harness.hpp"

namespace rlock::test {

class LossyProxy {
 public:
  enum class Loss {
    kReply,         // the request reaches the server; its reply is dropped with the connection
    kRequest,       // the connection is dropped before the request is forwarded
    kStalledReply,  // the request reaches the server; the reply never comes, the connection
                    // stays open (a dead flow: the client can only time out)
    kHeldReply,     // the request reaches the server; its reply and all that follows it on
                    // the connection are held until release_held() (a slow path, or a client
                    // descheduled: they reach the client in one read)
  };

  // Listens on a free 127.0.0.1 port and forwards every connection to `upstream_port`.
  explicit LossyProxy(int upstream_port);
  ~LossyProxy();
  LossyProxy(const LossyProxy&) = delete;
  LossyProxy& operator=(const LossyProxy&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // The next `times` requests (reads from a client) whose bytes contain `marker` suffer
  // `loss`; everything else passes through.
  void lose(const std::string& marker, Loss loss, int times = 1);
  // Everything through the proxy from now on, open connections and new ones: kDrop closes
  // them at once (a firewall that rejects), kStall accepts them and forwards nothing either
  // way (a blackhole: the client can only time out), kNone forwards again (new connections;
  // the stalled ones are closed).
  enum class Cut { kNone, kDrop, kStall };
  void cut(Cut how);

  // Whether the bytes held (kHeldReply) so far contain `marker`.
  bool held_contains(const std::string& marker);
  // Delivers what is held, each connection's in one write, and forwards from then on;
  // returns how many connections had their held bytes delivered (0 when the client had
  // given up and closed its connection meanwhile).
  int release_held();

  // How many losses have happened so far.
  int losses() const { return losses_.load(); }

 private:
  void loop();

  int upstream_port_;
  int port_ = 0;
  Fd listener_;
  Fd stop_read_, stop_write_;
  std::mutex mu_;
  std::string marker_;
  Loss loss_ = Loss::kReply;
  int times_ = 0;
  Cut cut_ = Cut::kNone;
  std::string held_;      // what every held flow has held, for held_contains()
  bool release_ = false;  // release_held() asked the loop to deliver
  int released_ = -1;     // the loop's answer to it
  std::condition_variable released_cv_;
  std::atomic<int> losses_{0};
  std::thread thread_;
};

}  // namespace rlock::test
