// The bash, zsh and fish completions in the real shells on a terminal: the test types
// `rlock ...<TAB>` as a user would, reads the list back off the screen and compares it with
// what the binary says it accepts (`rlock help`, each subcommand's --help), so that a
// subcommand or a flag added without its completion fails here. Lock names come from the
// suite's server, named by RLOCK_URL as a user's environment would.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "harness.hpp"

namespace rlock::test {
namespace {

using Words = std::set<std::string>;

constexpr int kColumns = 250;  // wide enough that no shell truncates a description
constexpr int kRows = 200;     // tall enough that no list pages or asks first
constexpr std::string_view kPrompt = "tty> ";
constexpr std::string_view kClear = "\033[2J";
// ^U empties the line (and closes fish's pager), ^L clears the screen: each list is read
// off a screen of its own.
constexpr std::string_view kFreshLine = "\x15\x0c";
// Bound in each shell to print "\033]0;mark-N\a" (a window title, invisible): once it
// arrives, the shell has done everything the keys typed before it asked for.
constexpr std::string_view kMarkKey = "\x1d";  // ^]

// A terminal kColumns wide with rows enough: text, "\r", "\n", "\b", "\t", the CSI cursor
// moves and erases the three shells use; other escape sequences (colours, modes, titles)
// change nothing shown. A UTF-8 character takes one cell.
class Screen {
 public:
  void feed(std::string_view out) {
    for (size_t i = 0; i < out.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(out[i]);
      if (c == '\033') {
        i = escape(out, i);
      } else if (c == '\r') {
        col_ = 0;
      } else if (c == '\n') {
        ++row_;
      } else if (c == '\b') {
        col_ = col_ > 0 ? col_ - 1 : 0;
      } else if (c == '\t') {
        col_ = (col_ / 8 + 1) * 8;
      } else if (c >= 0x20 && c != 0x7f) {
        size_t len = 1;
        while (c >= 0xc0 && i + len < out.size() && (out[i + len] & 0xc0) == 0x80) ++len;
        put(std::string(out.substr(i, len)));
        i += len - 1;
      }
    }
  }

  // The lines shown, trailing blanks removed.
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& cells : cells_) {
      std::string line;
      for (const auto& cell : cells) line += cell.empty() ? " " : cell;
      line.erase(line.find_last_not_of(' ') + 1);
      out.push_back(std::move(line));
    }
    return out;
  }

 private:
  std::vector<std::string>& row() {
    if (cells_.size() <= row_) cells_.resize(row_ + 1);
    return cells_[row_];
  }

  void put(std::string cell) {
    if (col_ >= static_cast<size_t>(kColumns)) {  // xterm's wrap, deferred to the next char
      ++row_;
      col_ = 0;
    }
    auto& r = row();
    if (r.size() <= col_) r.resize(col_ + 1);
    r[col_++] = std::move(cell);
  }

  // Applies the escape sequence at out[at]; returns the index of its last byte.
  size_t escape(std::string_view out, size_t at) {
    if (at + 1 >= out.size()) return at;
    char kind = out[at + 1];
    if (kind == ']') {  // OSC ... BEL or ST
      size_t end = out.find_first_of("\a\033", at + 2);
      if (end == std::string_view::npos) return out.size() - 1;
      return out[end] == '\a' ? end : end + 1;
    }
    if (kind == '(' || kind == ')') return at + 2;  // character set
    if (kind != '[') return at + 1;
    size_t end = at + 2;
    while (end < out.size() && (out[end] < 0x40 || out[end] > 0x7e)) ++end;
    if (end >= out.size()) return out.size() - 1;
    csi(out.substr(at + 2, end - at - 2), out[end]);
    return end;
  }

  void csi(std::string_view params, char final) {
    if (!params.empty() && (params[0] == '?' || params[0] == '>')) return;  // modes
    std::vector<size_t> n;
    for (size_t from = 0;;) {
      size_t semi = params.find(';', from);
      std::string_view p = params.substr(from, semi - from);
      n.push_back(p.empty() ? 0 : std::stoul(std::string(p)));
      if (semi == std::string_view::npos) break;
      from = semi + 1;
    }
    size_t count = std::max<size_t>(n[0], 1);
    auto& r = row();
    switch (final) {
      case 'A':
        row_ = row_ > count ? row_ - count : 0;
        break;
      case 'B':
        row_ += count;
        break;
      case 'C':
        col_ += count;
        break;
      case 'D':
        col_ = col_ > count ? col_ - count : 0;
        break;
      case 'G':
        col_ = count - 1;
        break;
      case 'd':
        row_ = count - 1;
        break;
      case 'H':
      case 'f':
        row_ = count - 1;
        col_ = n.size() > 1 ? std::max<size_t>(n[1], 1) - 1 : 0;
        break;
      case 'K':
        if (n[0] == 0) r.resize(std::min(col_, r.size()));
        if (n[0] == 1) std::fill_n(r.begin(), std::min(col_ + 1, r.size()), std::string());
        if (n[0] == 2) r.clear();
        break;
      case 'J':
        if (n[0] == 0) {
          r.resize(std::min(col_, r.size()));
          cells_.resize(row_ + 1);
        }
        if (n[0] >= 2) cells_.clear();
        break;
      case 'P':
        if (col_ < r.size())
          r.erase(r.begin() + col_, r.begin() + std::min(col_ + count, r.size()));
        break;
      case 'X':
        for (size_t c = col_; c < std::min(col_ + count, r.size()); ++c) r[c].clear();
        break;
      case '@':
        if (col_ < r.size()) r.insert(r.begin() + col_, count, std::string());
        break;
      default:
        break;  // colours and the like
    }
  }

  std::vector<std::vector<std::string>> cells_;
  size_t row_ = 0;
  size_t col_ = 0;
};

// How a shell shows a candidate's description beside it.
enum class Descriptions { kNone, kAfterDashes, kInParentheses };

struct ShellSetup {
  std::string program;
  std::string package;  // the Debian package that provides it
  std::vector<std::string> args;
  std::string rc;    // typed as `source RC` before anything else
  std::string tabs;  // the keys that list the candidates
  Descriptions descriptions;
};

std::string completions_dir() { return RLOCK_SOURCE_DIR "/completions"; }

// bash without its startup files or /etc/inputrc, with bash-completion as a distribution
// loads it.
ShellSetup bash_setup() {
  return {"bash",
          "bash",
          {"--norc", "--noprofile", "-i"},
          "PS1='" + std::string(kPrompt) + "'\n" +
              "bind 'set enable-bracketed-paste off'\n"
              "bind 'set bell-style none'\n"
              "source /usr/share/bash-completion/bash_completion\n"
              "source " +
              completions_dir() + "/rlock.bash\n" +
              "bind -x '\"\\C-]\": printf \"\\033]0;mark-%d\\a\" $((++marks))'\n",
          // TAB inserts a common prefix; TAB then lists after a TAB that changed nothing.
          "\t\t\t",
          Descriptions::kNone};
}

// zsh without startup files. No menu completion: a second TAB lists again instead of
// inserting the first candidate, and nothing asks before a long list.
ShellSetup zsh_setup() {
  return {"zsh",
          "zsh",
          {"-f", "-i"},
          "PROMPT='" + std::string(kPrompt) + "'\n" +
              "unsetopt auto_menu prompt_sp\n"
              "unset zle_bracketed_paste\n"
              "fpath=(" +
              completions_dir() + " $fpath)\n" +
              "autoload -Uz compinit && compinit -u -D\n"
              "LISTMAX=100000\n"
              "zstyle ':completion:*' list-rows-first true\n"
              "zstyle ':completion:*' menu no\n"
              "mark() { printf '\\033]0;mark-%d\\a' $((++marks)) }\n"
              "zle -N mark\n"
              "bindkey '^]' mark\n",
          "\t\t",
          Descriptions::kAfterDashes};
}

// fish without config; nothing autoloaded, only the completions under test.
ShellSetup fish_setup() {
  return {"fish",
          "fish",
          {"--no-config", "-i"},
          "function fish_prompt; printf '" + std::string(kPrompt) +
              "'; end\n"
              "function fish_right_prompt; end\n"
              "function fish_title; end\n"
              "set -g fish_complete_path\n"
              "source " +
              completions_dir() + "/rlock.fish\n" +
              "set -g marks 0\n"
              "function mark; set -g marks (math $marks + 1); printf '\\e]0;mark-%d\\a' $marks; "
              "end\n"
              "bind \\x1d mark\n",
          "\t",
          Descriptions::kInParentheses};
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (size_t from = 0; from <= dirs.size();) {
    size_t colon = std::min(dirs.find(':', from), dirs.size());
    std::filesystem::path candidate =
        std::filesystem::path(dirs.substr(from, colon - from)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    from = colon + 1;
  }
  return false;
}

// One shell on a terminal of its own, as a user with the built rlock first on PATH and
// RLOCK_URL naming `redis`. The destructor kills it by pid (PtyProcess).
class Shell {
 public:
  Shell(const ShellSetup& setup, const TempDir& home, const RedisServer& redis)
      : setup_(setup), pty_(start(setup, home, redis)) {
    pty_.send("source " + (home / "rc") + "\n");
    ready_ = pty_.expect("setup done", deadline(20s));
  }

  bool ready() const { return ready_; }
  // Everything the terminal showed, escape sequences and all.
  const std::string& transcript() const { return pty_.output(); }

  // The candidates listed below the command line after typing `line` and the shell's
  // listing keys on a cleared screen, descriptions left out.
  Words listed(const std::string& line) {
    const size_t from = pty_.output().size();
    pty_.send(std::string(kFreshLine) + line + setup_.tabs);
    const auto until = deadline(10s);
    // The mark is typed only once the list shows, so that no key is pending while a shell
    // decides whether to draw it.
    bool shown = pty_.await(
        [&](const std::string& out) {
          return !list_rows(screen_of(out, from, out.size())).empty();
        },
        until);
    std::string mark = cat("\033]0;mark-", ++marks_, "\a");
    pty_.send(kMarkKey);
    bool marked = pty_.expect(mark, deadline(10s));
    const std::string& out = pty_.output();
    size_t end = marked ? out.find(mark, from) : out.size();
    shown_ = screen_of(out, from, end);
    CHECK_MESSAGE(shown, "no list within 10 s");
    CHECK_MESSAGE(marked, "the shell did not run the mark key within 10 s");
    return candidates(list_rows(shown_));
  }

  // The screen the last listed() read, for failure messages.
  std::string screen() const {
    std::string text;
    for (const auto& l : shown_) text += l + "\n";
    return text;
  }

  // Exits the shell; true if it ended within 10 s.
  bool exit() {
    pty_.send(std::string(kFreshLine) + "exit\n");
    return pty_.wait(deadline(10s)).has_value();
  }

 private:
  static PtyProcess start(const ShellSetup& setup, const TempDir& home, const RedisServer& redis) {
    write_file(home / "rc", setup.rc + "printf 'setup %s\\n' done\n");
    std::vector<std::string> argv = {
        "sh", "-c", cat("stty rows ", kRows, " cols ", kColumns, " && exec \"$0\" \"$@\""),
        setup.program};
    argv.insert(argv.end(), setup.args.begin(), setup.args.end());
    std::string bin_dir = std::filesystem::path(rlock_binary()).parent_path().string();
    return PtyProcess(argv, {{"PATH", bin_dir + ":/usr/bin:/bin"},
                             {"HOME", home.path().string()},
                             {"TERM", "xterm"},
                             {"LC_ALL", "C.UTF-8"},
                             {"INPUTRC", "/dev/null"},
                             {"HISTFILE", ""},
                             {"RLOCK_URL", redis.topology_url()}});
  }

  // The screen since the last clear after `from`, up to `end`; empty before that clear.
  static std::vector<std::string> screen_of(const std::string& out, size_t from, size_t end) {
    size_t clear = out.rfind(kClear, end);
    if (clear == std::string::npos || clear < from) return {};
    Screen screen;
    screen.feed(std::string_view(out).substr(clear, end - clear));
    return screen.lines();
  }

  // The rows under the command line (the first row) that are not a prompt drawn again.
  static std::vector<std::string> list_rows(const std::vector<std::string>& lines) {
    std::vector<std::string> rows;
    for (size_t i = 1; i < lines.size(); ++i) {
      if (!lines[i].empty() && !lines[i].starts_with(kPrompt)) rows.push_back(lines[i]);
    }
    return rows;
  }

  Words candidates(const std::vector<std::string>& rows) const {
    Words words;
    for (std::string row : rows) {
      if (setup_.descriptions == Descriptions::kAfterDashes) {
        row = row.substr(0, row.find(" -- "));
      } else if (setup_.descriptions == Descriptions::kInParentheses) {
        int depth = 0;  // "(Key prefix (default rlock:))"
        for (char& c : row) {
          if (c == '(') ++depth;
          bool inside = depth > 0;
          if (c == ')' && depth > 0) --depth;
          if (inside) c = ' ';
        }
      }
      std::istringstream in(row);
      for (std::string w; in >> w;) words.insert(w);
    }
    return words;
  }

  ShellSetup setup_;
  PtyProcess pty_;
  bool ready_ = false;
  int marks_ = 0;
  std::vector<std::string> shown_;
};

std::string joined(const Words& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The lines of `section` ("Options:") of a help text, up to the blank line that ends it.
std::vector<std::string> section(const std::string& help, const std::string& title) {
  std::vector<std::string> lines;
  std::istringstream in(help);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (inside && line.empty()) break;
    if (inside) lines.push_back(line);
    if (line == title) inside = true;
  }
  return lines;
}

// What the binary accepts, from its help texts.
struct Accepted {
  Words subcommands;                      // rlock's, help included
  std::map<std::string, Words> inner;     // "sem" -> its subcommands
  std::map<std::string, Words> flags;     // "exec", "sem acquire" -> long flags, global included
  std::set<std::string> running_command;  // the paths that take `-- CMD`
};

std::string help_of(const std::string& path) {
  std::vector<std::string> args;
  std::istringstream in(path);
  for (std::string w; in >> w;) args.push_back(w);
  args.push_back("--help");
  auto r = rlock_raw(args);
  REQUIRE_MESSAGE(r.status == 0, path, ": ", r.err);
  return r.out;
}

Words first_words(const std::vector<std::string>& lines) {
  Words words;
  for (const auto& l : lines) {
    std::istringstream in(l);
    std::string w;
    if (in >> w) words.insert(w);
  }
  return words;
}

// "  -w,--wait DUR ...": --wait. Continuation lines of a description are indented deeper.
Words long_flags(const std::string& help) {
  Words flags;
  for (const auto& l : section(help, "Options:")) {
    if (!l.starts_with("  -")) continue;
    std::string names = l.substr(2, l.find(' ', 2) - 2);
    std::istringstream in(names);
    for (std::string f; std::getline(in, f, ',');) {
      if (f.starts_with("--")) flags.insert(f);
    }
  }
  return flags;
}

Accepted accepted() {
  Accepted a;
  std::string top = help_of("");
  a.subcommands = first_words(section(top, "Subcommands:"));
  REQUIRE(a.subcommands.count("exec") == 1);
  Words global = long_flags(top);
  std::vector<std::string> paths;
  for (const auto& s : a.subcommands) {
    if (s == "help") continue;
    std::string help = help_of(s);
    Words inner = first_words(section(help, "Subcommands:"));
    if (inner.empty()) {
      paths.push_back(s);
    } else {
      a.inner[s] = inner;
      for (const auto& i : inner) paths.push_back(s + " " + i);
    }
  }
  for (const auto& p : paths) {
    std::string help = help_of(p);
    Words flags = long_flags(help);
    flags.insert(global.begin(), global.end());
    a.flags[p] = flags;
    for (const auto& l : section(help, "Positionals:")) {
      if (l.find("-- CMD") != std::string::npos) a.running_command.insert(p);
    }
  }
  return a;
}

void check_shell(const ShellSetup& setup) {
  REQUIRE_MESSAGE(on_path(setup.program), setup.program, " is not installed: apt-get install ",
                  setup.package);
  if (setup.program == "bash") {
    REQUIRE_MESSAGE(std::filesystem::exists("/usr/share/bash-completion/bash_completion"),
                    "bash-completion is not installed: apt-get install bash-completion");
  }
  Accepted binary = accepted();
  RedisServer redis;
  for (const char* name : {"deploy-prod", "deploy-staging", "backup"}) {
    REQUIRE(rlock(redis, {"lock", name, "--owner", "t", "--lease", "5m"}).status == 0);
  }
  TempDir home;
  Shell shell(setup, home, redis);
  REQUIRE_MESSAGE(shell.ready(), "the shell did not source its setup within 20 s; terminal: ",
                  json(shell.transcript()).dump());

  // With `separator`, the list may also hold `--`, the separator before CMD (or before a
  // NAME that starts with '-'): no flag, and some shells offer it before NAME too.
  auto check = [&](const std::string& line, const Words& expected, bool separator = false) {
    CAPTURE(line);
    Words shown = shell.listed(line);
    INFO("screen:\n" << shell.screen());
    if (separator) shown.erase("--");
    CHECK(joined(shown) == joined(expected));
  };

  check("rlock ", binary.subcommands);
  check("rlock help ", binary.subcommands);
  for (const auto& [sub, inner] : binary.inner) {
    check("rlock " + sub + " ", inner);
    check("rlock help " + sub + " ", inner);
  }
  for (const auto& [path, flags] : binary.flags) {
    check("rlock " + path + " --", flags, binary.running_command.count(path) == 1);
  }
  check("rlock unlock dep", {"deploy-prod", "deploy-staging"});
  check("rlock inspect dep", {"deploy-prod", "deploy-staging"});
  CHECK(shell.exit());
}

TEST_CASE("completions: bash on a terminal lists subcommands, flags, held locks, help topics") {
  check_shell(bash_setup());
}

TEST_CASE("completions: zsh on a terminal lists subcommands, flags, held locks, help topics") {
  check_shell(zsh_setup());
}

TEST_CASE("completions: fish on a terminal lists subcommands, flags, held locks, help topics") {
  check_shell(fish_setup());
}

}  // namespace
}  // namespace rlock::test
