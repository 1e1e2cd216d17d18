// `rlock inspect --watch`: on a terminal, a table refreshed in place that follows other
// processes' locks, cut to the terminal's size (also after a resize), left with q or ^C
// with the terminal given back; elsewhere one JSON array a line, sooner than the interval
// where the server sends keyspace notifications, ending quietly when the reader goes away;
// Redis lost and back; the usage errors.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>

#include "harness.hpp"

namespace rlock::test {
namespace {

// What a terminal shows for `out`, for the sequences rlock writes: the alternate screen
// (ESC[?1049h / l: a blank screen of its own, then the main one again as it was), cursor
// home (ESC[H), erase to the end of the line (ESC[K) and below (ESC[J), "\r", "\n"; the
// cursor's visibility (ESC[?25h / l) is noted. Anything else is text, one byte a column.
struct Screen {
  std::vector<std::string> main{""}, alt{""};
  bool on_alt = false;
  bool cursor_shown = true;
  size_t row = 0, col = 0;

  std::vector<std::string>& lines() { return on_alt ? alt : main; }

  explicit Screen(const std::string& out) {
    size_t main_row = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      auto seq = [&](std::string_view s) {
        if (out.compare(i, s.size(), s) != 0) return false;
        i += s.size() - 1;
        return true;
      };
      if (seq("\033[?1049h")) {
        main_row = row;
        alt = {""};
        on_alt = true;
        row = col = 0;
      } else if (seq("\033[?1049l")) {
        on_alt = false;
        row = main_row;
        col = 0;
      } else if (seq("\033[?25l")) {
        cursor_shown = false;
      } else if (seq("\033[?25h")) {
        cursor_shown = true;
      } else if (seq("\033[H")) {
        row = col = 0;
      } else if (seq("\033[K")) {
        line().resize(std::min(col, line().size()));
      } else if (seq("\033[J")) {
        line().resize(std::min(col, line().size()));
        lines().resize(row + 1);
      } else if (out[i] == '\r') {
        col = 0;
      } else if (out[i] == '\n') {
        if (++row == lines().size()) lines().emplace_back();
        col = 0;
      } else {
        std::string& l = line();
        if (col < l.size()) {
          l[col] = out[i];
        } else {
          l.append(col - l.size(), ' ').push_back(out[i]);
        }
        ++col;
      }
    }
  }
  std::string& line() {
    while (lines().size() <= row) lines().emplace_back();
    return lines()[row];
  }
  // The shown lines (of the current screen) that contain `text`.
  int count(std::string_view text) {
    int n = 0;
    for (const auto& l : lines()) n += l.find(text) != std::string::npos;
    return n;
  }
  std::string dump() { return json(lines()).dump(1); }
};

// `rlock args` on a fresh terminal of `rows` x `columns`, run by a shell that prints the
// terminal's modes (`stty -a`) once rlock has exited, and exits with rlock's status. The
// shell survives the ^C typed for rlock (its trap), and rlock still gets SIGINT as typed.
PtyProcess watch_on_terminal(const RedisServer& redis, int rows, int columns,
                             const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "sh", "-c",
      "trap : INT; stty rows " + std::to_string(rows) + " cols " + std::to_string(columns) +
          " && \"$0\" \"$@\"; rc=$?; echo; echo modes:; stty -a; exit $rc"};
  for (auto& a : rlock_argv(redis, args)) argv.push_back(std::move(a));
  return PtyProcess(argv, {{"TERM", "xterm"}});
}

// Reads the terminal until `done` holds for what it shows (on the alternate screen).
bool shows(PtyProcess& tty, const std::function<bool(Screen&)>& done, Clock::time_point until) {
  while (true) {
    Screen s(tty.output());
    if (s.on_alt && done(s)) return true;
    // Any new output: a frame is written in one go, but may arrive in pieces.
    if (Clock::now() >= until || !tty.expect("\033[J", until)) return false;
  }
}

// The terminal was given back: cursor shown, alternate screen left, modes restored.
void check_given_back(PtyProcess& tty) {
  Screen s(tty.output());
  INFO("terminal: " << json(tty.output()).dump());
  CHECK_FALSE(s.on_alt);
  CHECK(s.cursor_shown);
  const std::string& out = tty.output();
  size_t modes = out.find("modes:");
  REQUIRE(modes != std::string::npos);
  CHECK(out.rfind("\033[?1049l") < modes);
  CHECK(out.find(" icanon", modes) != std::string::npos);
  CHECK(out.find(" echo ", modes) != std::string::npos);
  CHECK(s.count("TYPE") == 0);  // the table stayed on the alternate screen
}

TEST_CASE("inspect --watch on a terminal: follows other processes' locks, q quits") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "held-one", "--owner", "alice", "--lease", "60s"}).status == 0);
  auto tty = watch_on_terminal(redis, 12, 100, {"inspect", "--watch", "--interval", "300ms"});
  INFO("terminal: " << json(tty.output()).dump());
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("held-one") == 1; }, deadline(10s)));
  Screen first(tty.output());
  INFO("screen: " << first.dump());
  CHECK(first.alt[0].starts_with("rlock inspect on "));
  CHECK(first.alt[0].find("1 object at ") != std::string::npos);
  CHECK(first.alt[0].ends_with("; q to quit"));
  CHECK(first.alt[1].starts_with("TYPE   NAME"));
  CHECK(first.alt[2].starts_with("lock   held-one"));
  CHECK(first.alt[2].find("alice") != std::string::npos);
  CHECK_FALSE(first.cursor_shown);

  REQUIRE(rlock(redis, {"lock", "second", "--owner", "bob", "--lease", "60s"}).status == 0);
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("bob") == 1; }, deadline(10s)));
  REQUIRE(rlock(redis, {"unlock", "held-one", "--owner", "alice"}).status == 0);
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("held-one") == 0; }, deadline(10s)));
  Screen after(tty.output());
  INFO("screen: " << after.dump());
  CHECK(after.alt[0].find("1 object at ") != std::string::npos);
  CHECK(after.alt[2].starts_with("lock   second"));
  CHECK(after.alt.size() == 3);  // the row that went was erased

  tty.send("q");
  CHECK(tty.wait(deadline(10s)).value_or(kStillRunning) == 0);
  check_given_back(tty);
}

TEST_CASE("inspect --watch on a terminal: Redis lost shows in the header; ^C quits with 0") {
  RedisServer redis;
  auto tty = watch_on_terminal(redis, 12, 100, {"inspect", "--watch", "--interval", "200ms"});
  INFO("terminal: " << json(tty.output()).dump());
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("0 objects at ") == 1; }, deadline(10s)));
  redis.stop();
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("reconnecting… (listed at ") == 1; }, deadline(10s)));
  CHECK(Screen(tty.output()).alt[0].find("; q to quit") !=
        std::string::npos);  // the reason may be cut
  tty.send("\x03");
  CHECK(tty.wait(deadline(10s)).value_or(kStillRunning) == 0);
  check_given_back(tty);
}

TEST_CASE("inspect --watch on a terminal: cut to its size, and redrawn when resized") {
  RedisServer redis;
  for (const char* name : {"a1", "a2", "a3", "a4", "a5", "a6"})
    REQUIRE(rlock(redis, {"lock", name, "--owner", "o", "--lease", "60s"}).status == 0);
  auto tty = watch_on_terminal(redis, 5, 60, {"inspect", "--watch", "--interval", "10s"});
  INFO("terminal: " << json(tty.output()).dump());
  // 5 rows: the header, the column titles, two rows and what is left out.
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("… 4 more") == 1; }, deadline(10s)));
  Screen small(tty.output());
  INFO("screen: " << small.dump());
  CHECK(small.alt.size() == 5);
  CHECK(small.alt[2].starts_with("lock   a1"));
  CHECK(small.alt[3].starts_with("lock   a2"));
  for (const auto& l : small.alt) CHECK(l.size() <= 59 + 2);  // "…" is 3 bytes, 1 column

  // The terminal grows (as a window does): the kernel sends SIGWINCH, rlock redraws from
  // the last listing, long before the 10s interval.
  Fd slave(::open(("/proc/" + std::to_string(tty.pid()) + "/fd/0").c_str(), O_RDWR | O_NOCTTY));
  REQUIRE(slave);
  winsize ws{};
  ws.ws_row = 12;
  ws.ws_col = 30;
  REQUIRE(::ioctl(slave.get(), TIOCSWINSZ, &ws) == 0);
  REQUIRE(shows(
      tty, [](Screen& s) { return s.count("a6") == 1; }, deadline(5s)));
  Screen grown(tty.output());
  INFO("screen: " << grown.dump());
  CHECK(grown.count("more") == 0);
  for (const auto& l : grown.alt) CHECK(l.size() <= 29);
  tty.send("q");
  CHECK(tty.wait(deadline(10s)).value_or(kStillRunning) == 0);
  check_given_back(tty);
}

// The listing's objects' names, from one JSON line.
std::vector<std::string> names_in(const std::string& line) {
  std::vector<std::string> names;
  json doc = parse_json(line);
  REQUIRE(doc.is_array());
  for (const auto& o : doc) names.push_back(o.at("name"));
  return names;
}

TEST_CASE("inspect --watch off a terminal: one JSON line per listing, at once on a change") {
  // With keyspace notifications, a change shows long before the 10s interval; a cluster's
  // nodes notify of their own keys only, so there it is the interval, made short.
  const bool notified = test_topology() != "cluster";
  RedisServer redis({.config = {"notify-keyspace-events KEA"}});
  REQUIRE(rlock(redis, {"lock", "x1", "--owner", "o", "--lease", "60s"}).status == 0);
  auto watch = spawn_rlock(
      redis, {"-v", "inspect", "--watch", "--interval", notified ? "10s" : "300ms", "x*"});
  auto first = watch.read_line(deadline(10s));
  REQUIRE(first);
  CHECK(names_in(*first) == std::vector<std::string>{"x1"});
  std::optional<std::string> explained;
  while ((explained = watch.read_err_line(deadline(5s))) &&
         !explained->starts_with("rlock: listing again")) {
  }
  REQUIRE(explained);
  CHECK(explained->starts_with(notified ? "rlock: listing again on keyspace notifications"
                                        : "rlock: listing again every 300ms (a cluster"));

  auto changed = Clock::now();
  REQUIRE(rlock(redis, {"lock", "x0", "--owner", "o", "--lease", "60s"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "other", "--owner", "o", "--lease", "60s"}).status == 0);
  std::optional<std::string> next;
  while ((next = watch.read_line(deadline(10s))) && names_in(*next).size() < 2) {
  }
  REQUIRE(next);
  CHECK(names_in(*next) == std::vector<std::string>{"x0", "x1"});  // sorted, `other` not
  if (notified) CHECK(ms_between(changed) < 5000);

  watch.kill(SIGTERM);
  CHECK(watch.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(watch.err().find("trying again") == std::string::npos);
}

TEST_CASE("inspect --watch off a terminal: a reader that goes away ends it quietly") {
  RedisServer redis;
  auto cmd = [&] {
    std::string line;
    for (const auto& a : rlock_argv(redis, {"inspect", "--watch", "--interval", "200ms"}))
      line += "'" + a + "' ";
    return line;
  }();
  auto r = run({"bash", "-c", "set -o pipefail; " + cmd + "| head -n 2"}, {}, 20s);
  CHECK(r.status == 0);
  CHECK(r.out == "[]\n[]\n");
  CHECK(r.err.empty());
}

TEST_CASE("inspect --watch off a terminal: Redis lost, said once, then listed again") {
  RedisServer redis;
  auto watch = spawn_rlock(redis, {"inspect", "--watch", "--interval", "200ms"});
  REQUIRE(watch.read_line(deadline(10s)) == "[]");
  redis.stop();
  auto lost = watch.read_err_line(deadline(10s));
  REQUIRE(lost);
  CHECK(lost->find("; trying again every 200ms") != std::string::npos);
  redis.restart();
  REQUIRE(rlock(redis, {"lock", "back", "--owner", "o", "--lease", "60s"}).status == 0);
  std::optional<std::string> line;
  while ((line = watch.read_line(deadline(15s))) && names_in(*line).empty()) {
  }
  REQUIRE(line);
  CHECK(names_in(*line) == std::vector<std::string>{"back"});
  CHECK(watch.read_err_line(deadline(1s)) == "rlock: redis is back; listing again");
  watch.kill(SIGINT);
  CHECK(watch.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("inspect --watch: usage errors, one line each, before any connection") {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"inspect", "--watch", "--interval", "0"}, "--interval must be at least 100ms, not 0ms"},
      {{"inspect", "--watch", "--interval", "50ms"}, "--interval must be at least 100ms"},
      {{"inspect", "--watch", "--interval", "-1s"}, "--interval"},
      {{"inspect", "--watch", "--interval", "soon"}, "--interval"},
      {{"inspect", "--interval", "1s"}, "--interval is for --watch"},
      {{"--format", "prometheus", "inspect", "--watch"}, "not --format prometheus"},
  };
  for (const auto& c : cases) {
    // A port nobody listens on: a usage error must come before any connection.
    auto r = rlock_raw([&] {
      std::vector<std::string> argv = {"--url", "redis://127.0.0.1:1"};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      return argv;
    }());
    INFO("args: " << json(c.args).dump() << " stderr: " << r.err);
    CHECK(r.status == 64);
    CHECK(r.out.empty());
    CHECK(line_count(r.err) == 1);
    CHECK(r.err.find(c.error) != std::string::npos);
  }
}

}  // namespace
}  // namespace rlock::test
