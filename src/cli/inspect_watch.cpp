#include "cli/inspect_watch.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>

#include "cli/console.hpp"
#include "cli/settings.hpp"
#include "cli/stdout_writer.hpp"
#include "cli/terminal.hpp"
#include "cli/wakeups.hpp"
#include "cli/watch_screen.hpp"
#include "exec/signals.hpp"
#include "inspect/table.hpp"
#include "inspect/watch.hpp"
#include "util/error.hpp"
#include "util/one_line.hpp"

namespace rlock::cli {
namespace {

using Objects = std::vector<inspect::Shown>;

// True when INT, TERM, HUP or QUIT came (each ends the watch).
bool stop_signal_came(exec::SignalFd& signals) {
  bool stop = false;
  while (auto s = signals.next()) stop = stop || exec::is_forwarded(*s);
  return stop;
}

std::string local_time() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

std::string without_newline(std::string line) {
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

// The document `inspect` prints, on one line.
std::string json_line(const Objects& objects) {
  std::string line = "[";
  for (const auto& o : objects) {
    if (line.size() > 1) line += ",";
    // Bytes that are not UTF-8 (written by other clients) print as U+FFFD, as in inspect.
    line += o.decoded.json.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return line + "]\n";
}

// The reader of stdout went away: a pipe's write end reports an error then.
bool stdout_gone() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

// Stdout not a terminal: one line per listing. A closed reader (`| head -n 2`) is the
// way such a watch is meant to end, not a failure: exit 0, quietly.
int watch_lines(inspect::Watch& watch, const Console& console, exec::SignalFd& signals,
                Objects objects, Millis interval) {
  Wakeups wake;
  wake.add(signals.fd());
  wake.add(STDOUT_FILENO, /*readable=*/false);
  bool lost = false;
  while (true) {
    if (!console.quiet()) {
      int error = 0;
      write_stdout(json_line(objects), &error);
      if (error == EPIPE) return 0;
      if (error != 0) throw Error(kExitIoError, stdout_failure(error));
    }
    while (true) {
      if (!watch.wait(wake.fd())) {
        if (stop_signal_came(signals) || stdout_gone()) return 0;
        continue;
      }
      try {
        objects = watch.list();
      } catch (const UnavailableError& e) {
        if (!lost) {
          console.notice(std::string(e.what()) + "; trying again every " +
                         format_duration(interval));
        }
        lost = true;
        continue;
      }
      if (lost) console.notice("redis is back; listing again");
      lost = false;
      break;
    }
  }
}

// What a key typed on the watch's terminal asks for.
enum class Key { kNone, kQuit };

// Reads the keys typed so far (the terminal is in non-canonical mode: a read never
// blocks). q and ^C (typed with `stty -isig`) quit, and so does a terminal that hung up.
Key read_keys() {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return Key::kNone;
  char keys[64];
  ssize_t n = read(STDIN_FILENO, keys, sizeof keys);
  if (n == 0) return Key::kQuit;  // readable yet nothing to read: hung up
  for (ssize_t i = 0; i < n; ++i) {
    if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == '\x03') return Key::kQuit;
  }
  return Key::kNone;
}

// The screen of a watch: its header line, column titles, then one row per object.
class Screen {
 public:
  explicit Screen(std::string title) : title_(std::move(title)) {}

  void listed(const Objects& objects) {
    rows_.clear();
    quorum_ = false;
    for (const auto& o : objects) {
      quorum_ = quorum_ || o.decoded.json.contains("member");
      rows_.push_back(without_newline(inspect::table_row(o.type->type(), o.name, o.decoded)));
    }
    listed_at_ = local_time();
    status_ = std::to_string(objects.size()) + (objects.size() == 1 ? " object" : " objects") +
              " at " + listed_at_;
    why_ = "";
  }
  // The table stays as last listed, and says so; the reason comes last, where a narrow
  // terminal cuts it rather than "q to quit".
  void lost(const std::string& why) {
    status_ = "reconnecting… (listed at " + listed_at_ + ")";
    why_ = "; " + one_line(why);
  }

  std::string frame() const {
    std::string header = title_ + ": " + status_ + "; q to quit" + why_;
    return screen_frame({header, without_newline(inspect::table_header(quorum_))}, rows_,
                        terminal_size(STDOUT_FILENO));
  }

 private:
  std::string title_;
  std::string status_;
  std::string listed_at_;
  std::string why_;
  std::vector<std::string> rows_;
  bool quorum_ = false;  // the rows have a MEMBER column
};

int watch_screen(inspect::Watch& watch, exec::SignalFd& signals, Objects objects,
                 std::string title) {
  TerminalSignals terminal_signals;
  FullScreen full(STDIN_FILENO, STDOUT_FILENO);
  Wakeups wake;
  wake.add(signals.fd());
  wake.add(terminal_signals.fd());
  Screen screen(std::move(title));
  screen.listed(objects);
  bool keys_watched = false;
  bool redraw = true;
  while (true) {
    // Drawn, and keys read, only in the foreground: from the background a write or a read
    // stops rlock (SIGTTOU, SIGTTIN). Taken back at the next wake after a `fg`.
    const bool foreground = in_foreground(STDOUT_FILENO);
    if (redraw && foreground && full.enter()) {
      write_terminal(STDOUT_FILENO, screen.frame());
      redraw = false;
    }
    const bool watch_keys = foreground && full.reads_keys();
    if (watch_keys != keys_watched) {
      if (watch_keys) {
        wake.add(STDIN_FILENO);
      } else {
        wake.remove(STDIN_FILENO);
      }
      keys_watched = watch_keys;
    }
    if (watch.wait(wake.fd())) {
      try {
        screen.listed(watch.list());
      } catch (const UnavailableError& e) {
        screen.lost(e.what());
      }
      redraw = true;
      continue;
    }
    if (stop_signal_came(signals)) return 0;
    while (auto s = terminal_signals.next()) {
      if (*s == SIGTSTP) {
        // ^Z: the shell gets its screen and modes back before the job stops.
        full.leave();
        kill(getpid(), SIGSTOP);
      }
      redraw = true;  // a new size (WINCH), or back from a stop (CONT)
    }
    if (keys_watched && read_keys() == Key::kQuit) return 0;
  }
}

}  // namespace

int run_inspect_watch(const Settings& settings, const WatchRequest& request) {
  Console console(settings);
  exec::SignalFd signals;  // before any thread starts: they all inherit the blocked mask
  redis::Topology topology = open_topology(settings);
  auto layout = make_layout(settings);
  inspect::Watch watch(topology, *layout, request.pattern, request.types, request.interval);
  Objects objects = watch.list();  // fails as `inspect` does, before the screen is taken
  console.explain("listing again " + watch.timing());
  if (!isatty(STDOUT_FILENO)) {
    return watch_lines(watch, console, signals, std::move(objects), request.interval);
  }
  std::string title = "rlock inspect";
  if (request.pattern != "*") title += " " + shell_quote(request.pattern);
  title += " on " + settings.target.describe();
  return watch_screen(watch, signals, std::move(objects), one_line(title));
}

}  // namespace rlock::cli
