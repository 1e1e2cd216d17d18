#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "prim/wait.hpp"

namespace rlock::cli {

// While a command waits with stderr on a terminal: one status line on stderr, redrawn in
// place ("\r\033[K") by a timer thread every 500 ms from what the last attempt said,
// e.g. "waiting for lock 'deploy-prod': held by ci-4512 (lease 25s left), 2 ahead of
// you, 12m left of --wait". The timer costs no Redis round trip: leases and the time left
// count down from the attempt's reply. A line is at most the terminal's width (asked at
// every draw, so a resize takes effect at the next one), and is drawn only while rlock is
// the terminal's foreground process group: a stopped or backgrounded rlock writes
// nothing (no SIGTTOU, no line in the middle of the shell's), and a continued one redraws
// over whatever the line holds.
class WaitLine {
 public:
  // nullptr unless stderr is a terminal and `quiet` is false. `subject`: what is waited
  // for, e.g. "lock 'deploy-prod'" (escaped here).
  static std::shared_ptr<WaitLine> on_terminal(bool quiet, std::string subject);
  explicit WaitLine(std::string subject);
  ~WaitLine();
  WaitLine(const WaitLine&) = delete;
  WaitLine& operator=(const WaitLine&) = delete;

  // What the attempt that goes to sleep said; starts the timer the first time.
  void update(const prim::Waitable::Step& step, Millis wait_left);
  // Runs `write` (a line of its own on stderr, such as a -v explanation) with the status
  // line erased; the next tick draws it again below.
  void above(const std::function<void()>& write);
  // Erases the line for good and stops the timer; idempotent.
  void stop();

  // Every WaitHooks callback of `hooks` that prints wrapped so that it prints above the
  // line, with on_wait updating it and on_done stopping it. `line` may be null: `hooks`
  // comes back unchanged.
  static prim::WaitHooks attach(std::shared_ptr<WaitLine> line, prim::WaitHooks hooks);

 private:
  void tick();
  std::string text() const;  // the line now, untruncated
  void draw();               // with mutex_ held
  void erase();              // with mutex_ held

  const std::string subject_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread timer_;
  bool stopping_ = false;
  bool shown_ = false;  // the terminal's current line holds the status line
  prim::Waitable::Step step_;
  Deadline seen_{};  // when step_ came
  Deadline until_{};
  bool forever_ = false;
};

}  // namespace rlock::cli
