#include "redis/subscriber.hpp"

#include <poll.h>

#include <cerrno>

#include "redis/errors.hpp"

namespace rlock::redis {

Subscriber Subscriber::open(const ConnectOptions& options, const std::string& channel) {
  Subscriber sub(Connection::open(options));
  sub.conn_.command({"SUBSCRIBE", channel});  // reply is the subscribe confirmation
  return sub;
}

bool Subscriber::take_buffered_message() {
  void* raw = nullptr;
  bool got_message = false;
  while (true) {
    if (redisGetReplyFromReader(conn_.context(), &raw) != REDIS_OK) conn_.throw_io_error("while waiting");
    if (!raw) return got_message;
    ReplyPtr reply(static_cast<redisReply*>(raw));
    got_message = true;  // only "message" pushes arrive once subscribed
  }
}

Subscriber::Wake Subscriber::wait(Deadline until, int interrupt_fd) {
  while (true) {
    if (take_buffered_message()) return Wake::kMessage;
    pollfd fds[2] = {{conn_.fd(), POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
    int nfds = interrupt_fd >= 0 ? 2 : 1;
    auto left = millis_until(until);
    int rc = poll(fds, nfds, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      conn_.throw_io_error("while waiting");
    }
    if (nfds == 2 && fds[1].revents) return Wake::kInterrupted;
    if (fds[0].revents) {
      if (redisBufferRead(conn_.context()) != REDIS_OK) conn_.throw_io_error("while waiting");
      continue;
    }
    if (SteadyClock::now() >= until) return Wake::kTimeout;
  }
}

}  // namespace rlock::redis
