// The waiting line: while a command waits with stderr on a terminal, one status line
// redrawn in place (holder, place in the queue, time left), erased before the job starts;
// cut to the terminal's width; nothing of it with -q or when stderr is not a terminal.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <functional>

#include "harness.hpp"

namespace rlock::test {
namespace {

// The screen lines a terminal shows for `out`: "\r" goes to column 0, "\033[K" erases to
// the end of the line, "\n" starts the next one; anything else is text.
std::vector<std::string> screen(const std::string& out) {
  std::vector<std::string> lines(1);
  size_t col = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    std::string& line = lines.back();
    if (out[i] == '\r') {
      col = 0;
    } else if (out[i] == '\n') {
      lines.emplace_back();
      col = 0;
    } else if (out.compare(i, 3, "\033[K") == 0) {
      line.resize(std::min(col, line.size()));
      i += 2;
    } else {
      if (col < line.size()) {
        line[col] = out[i];
      } else {
        line.push_back(out[i]);
      }
      ++col;
    }
  }
  return lines;
}

// rlock with args on a fresh terminal `columns` wide (stty), as the session's foreground.
PtyProcess on_terminal(const RedisServer& redis, int columns, std::vector<std::string> args) {
  std::vector<std::string> argv = {
      "sh", "-c", "stty cols " + std::to_string(columns) + " && exec \"$0\" \"$@\""};
  for (auto& a : rlock_argv(redis, args)) argv.push_back(std::move(a));
  return PtyProcess(argv, {{"TERM", "dumb"}});
}

std::string last_line(const std::string& out) {
  auto lines = screen(out);
  while (lines.size() > 1 && lines.back().empty()) lines.pop_back();
  return lines.back();
}

TEST_CASE("wait line: holder and place in the queue while waiting, erased before the job") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "J", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto first = spawn_rlock(redis, {"lock", "--wait", "60s", "J", "--owner", "first"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("J") + ":waiters"}) == 1;
      },
      10s));
  auto tty = on_terminal(
      redis, 150,
      {"exec", "--wait", "10m", "--owner", "me", "J", "--", "sh", "-c", "echo job-started"});
  INFO("terminal: " << json(tty.output()).dump());
  REQUIRE(tty.expect("ahead of you", deadline(10s)));
  std::string line = last_line(tty.output());
  CHECK(line.starts_with("waiting for lock 'J': held by holder (lease "));
  CHECK(line.find(" left), 1 ahead of you, ") != std::string::npos);
  CHECK(line.ends_with(" left of --wait"));
  CHECK((line.find("9m") != std::string::npos || line.find("10m") != std::string::npos));
  // Redrawn by the timer: the lease and the time left count down without a new attempt.
  REQUIRE(tty.expect("\r\033[Kwaiting for lock 'J'", deadline(3s)));

  REQUIRE(rlock(redis, {"unlock", "J", "--owner", "holder"}).status == 0);
  REQUIRE(first.wait(deadline(10s)).value_or(-1) == 0);  // `first` holds it now
  REQUIRE(tty.expect("held by first", deadline(5s)));
  CHECK(last_line(tty.output()).find("next in line") != std::string::npos);
  REQUIRE(rlock(redis, {"unlock", "J", "--owner", "first"}).status == 0);
  REQUIRE(tty.expect("job-started", deadline(10s)));
  CHECK(tty.wait(deadline(10s)).value_or(-1) == 0);
  auto shown = screen(tty.output());
  for (const auto& l : shown) CHECK_MESSAGE(l.find("waiting") == std::string::npos, l);
  CHECK(std::find(shown.begin(), shown.end(), "job-started") != shown.end());
}

TEST_CASE("wait line: a semaphore's permits, --wait inf, cut to a narrow terminal") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"sem", "acquire", "S", "--permits", "1", "--owner", "o"}).status == 0);
  auto wide = on_terminal(
      redis, 150, {"sem", "acquire", "S", "--permits", "1", "--wait", "inf", "--owner", "me"});
  INFO("terminal: " << json(wide.output()).dump());
  REQUIRE(wide.expect("no time limit", deadline(10s)));
  // The lease is the next permit's to end.
  std::string line = last_line(wide.output());
  CHECK(line.starts_with("waiting for semaphore 'S': 1 of 1 permits in use (lease "));
  CHECK(line.ends_with(" left), next in line, no time limit"));

  auto narrow = on_terminal(redis, 30, {"lock", "L", "--owner", "x", "--lease", "60s"});
  REQUIRE(narrow.wait(deadline(10s)).value_or(-1) == 0);
  auto cut = on_terminal(redis, 30, {"exec", "--wait", "5m", "L", "--owner", "y", "--", "true"});
  REQUIRE(cut.expect("\r\033[Kwaiting for lock 'L'", deadline(10s)));
  ::usleep(1'200'000);  // a few redraws
  cut.send("\x03");     // ^C (echoed): the wait ends, the line goes, then the notice
  CHECK(cut.wait(deadline(10s)).has_value());
  INFO("narrow terminal: " << json(cut.output()).dump());
  // Every drawn line fits in 29 columns (one less than the width: no wrap).
  const std::string& out = cut.output();
  for (size_t at = out.find("\033[K"); at != std::string::npos; at = out.find("\033[K", at + 1)) {
    std::string drawn = out.substr(at + 3, out.find_first_of("\r\n", at) - at - 3);
    if (drawn.ends_with("^C")) drawn.resize(drawn.size() - 2);
    if (drawn.starts_with("waiting for")) CHECK(drawn.size() <= 29);  // not the notice
  }
  // Erased before the notice ("rlock: interrupted ... while waiting for lock 'L'").
  for (const auto& l : screen(out)) CHECK_MESSAGE(!l.starts_with("waiting for"), l);
}

TEST_CASE("wait line: a queue's next item counts down, erased before the item's job") {
  RedisServer redis;
  auto empty = on_terminal(redis, 150, {"delay-pop", "Q", "--wait", "1m"});
  INFO("empty queue: " << json(empty.output()).dump());
  REQUIRE(empty.expect("left of --wait", deadline(10s)));
  CHECK(last_line(empty.output()).starts_with("waiting for queue 'Q': empty, "));
  empty.send("\x03");
  CHECK(empty.wait(deadline(10s)).value_or(-1) == 128 + SIGINT);

  REQUIRE(rlock(redis, {"delay-push", "Q", "--delay", "4s", "--id", "i1", "payload"}).status == 0);
  auto tty = on_terminal(redis, 150,
                         {"delay-pop", "Q", "--wait", "1m", "--", "sh", "-c", "echo ran-$(cat)"});
  INFO("terminal: " << json(tty.output()).dump());
  REQUIRE(tty.expect("left of --wait", deadline(10s)));
  std::string line = last_line(tty.output());
  CHECK(line.starts_with("waiting for queue 'Q': next item due in "));
  CHECK(line.find("lease") == std::string::npos);  // a queue's recheck is nobody's lease
  // Redrawn by the timer until the item is due; then the job runs with the line gone.
  REQUIRE(tty.expect("\r\033[Kwaiting for queue 'Q'", deadline(3s)));
  REQUIRE(tty.expect("ran-payload", deadline(15s)));
  CHECK(tty.wait(deadline(10s)).value_or(-1) == 0);
  auto shown = screen(tty.output());
  for (const auto& l : shown) CHECK_MESSAGE(l.find("waiting") == std::string::npos, l);
  CHECK(std::find(shown.begin(), shown.end(), "ran-payload") != shown.end());
}

// ^C on a terminal ends a wait as exec's does: the line taken down, one notice, exit
// 130, and the waiter gone from the queue at once (a killed waiter would stay queued, and a
// grant to it would hold the next waiter up for the claim window).
TEST_CASE("wait line: ^C ends the waits of lock, sem acquire and latch await, queue left") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "J", "--owner", "holder", "--lease", "60s"}).status == 0);
  REQUIRE(rlock(redis, {"sem", "acquire", "S", "--permits", "1", "--owner", "h"}).status == 0);
  REQUIRE(rlock(redis, {"latch", "set", "L", "2"}).status == 0);
  struct Case {
    std::vector<std::string> args;
    std::string subject;
    std::function<size_t()> queued;
  };
  std::vector<Case> cases = {
      {{"lock", "--wait", "1m", "J", "--owner", "me"},
       "lock 'J'",
       [&] {
         return static_cast<size_t>(redis.cmd_int({"ZCARD", lock_key("J") + ":waiters"}));
       }},
      {{"sem", "acquire", "S", "--permits", "1", "--wait", "1m", "--owner", "me"},
       "semaphore 'S'",
       [&] {
         return parse_json(rlock(redis, {"sem", "status", "S"}).out).at("waiters").size();
       }},
      {{"latch", "await", "L", "--wait", "1m"}, "latch 'L'", [] { return size_t(0); }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.subject);
    auto tty = on_terminal(redis, 150, c.args);
    INFO("terminal: " << json(tty.output()).dump());
    REQUIRE(tty.expect("left of --wait", deadline(10s)));
    if (c.subject != "latch 'L'") CHECK(c.queued() == 1);
    tty.send("\x03");
    REQUIRE(tty.wait(deadline(10s)).value_or(-1) == 128 + SIGINT);
    CHECK(c.queued() == 0);
    auto shown = screen(tty.output());
    for (const auto& l : shown) CHECK_MESSAGE(!l.starts_with("waiting for"), l);
    CHECK(std::any_of(shown.begin(), shown.end(), [&](const std::string& l) {
      return l.find("rlock: interrupted by signal 2 while waiting for " + c.subject) !=
             std::string::npos;
    }));
  }
  // Nothing was taken: the holder's release leaves the lock free.
  REQUIRE(rlock(redis, {"unlock", "J", "--owner", "holder"}).status == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("J")}) == 0);
}

TEST_CASE("wait line: nothing of it with -q, nor with stderr on a pipe") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "J", "--owner", "holder", "--lease", "60s"}).status == 0);
  auto quiet =
      on_terminal(redis, 150, {"-q", "exec", "--wait", "10s", "--owner", "q", "J", "--", "true"});
  auto piped = spawn_rlock(redis, {"exec", "--wait", "10s", "--owner", "p", "J", "--", "true"});
  REQUIRE(poll_until(
      [&] {
        return redis.cmd_int({"ZCARD", lock_key("J") + ":waiters"}) == 2;
      },
      10s));
  ::usleep(1'200'000);  // a few ticks of a timer that must not be there
  REQUIRE(rlock(redis, {"unlock", "J", "--owner", "holder"}).status == 0);
  CHECK(quiet.wait(deadline(15s)).value_or(-1) == 0);
  CHECK(piped.wait(deadline(15s)).value_or(-1) == 0);
  CHECK(quiet.output().find("waiting") == std::string::npos);
  CHECK(quiet.output().find('\033') == std::string::npos);
  CHECK(piped.err().find("waiting for") == std::string::npos);
  CHECK(piped.err().find('\033') == std::string::npos);
  CHECK(piped.err().find('\r') == std::string::npos);
  CHECK(line_count(piped.err()) <= 1);  // the busy notice, as before
}

}  // namespace
}  // namespace rlock::test
