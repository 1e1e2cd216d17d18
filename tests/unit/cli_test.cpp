#include <doctest/doctest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "cli/app.hpp"
#include "exec/signals.hpp"
#include "util/error.hpp"

namespace {

// Runs the CLI on arguments that must fail before any connection is made.
int usage_exit(std::vector<std::string> args, std::string* message = nullptr) {
  args.insert(args.begin(), "rlock");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    return rlock::cli::run(static_cast<int>(argv.size()), argv.data());
  } catch (const rlock::Error& e) {
    if (message) *message = e.what();
    return e.exit_code();
  }
}

}  // namespace

TEST_CASE("bad flags are usage errors before anything connects") {
  // The URL points at a port nothing listens on: reaching Redis would give 69, not 64.
  const std::vector<std::vector<std::string>> cases = {
      {"frobnicate"},
      {"lock"},
      {"lock", "a", "--bogus"},
      {"lock", "a", "--lease", "10x"},
      {"lock", "a", "--lease", "-5s"},
      {"lock", "a", "--lease", "0"},
      {"lock", "a", "--wait", "99999999999999999999d"},
      {"lock", "a", "--wait", "1s", "-n"},
      {"lock", "a", "-E", "300"},
      {"lock", ""},
      {"lock", std::string(513, 'n')},
      {"lock", "bad\x01name"},
      {"exec", "a", "true"},
      {"exec", "a"},
      {"exec", "a", "--"},
      {"exec", "a", "--on-lost", "NOPE", "--", "true"},
      {"exec", "a", "--kill-after", "1x", "--", "true"},
      {"unlock", "a"},
      {"unlock", "a", "--owner", "o", "--force"},
      {"inspect", "--format", "xml"},
      {"--url", "http://x", "inspect"},
      {"--timeout", "0", "inspect"},
      {"help", "nosuch"},
      {"exce"},
      {"lock", "a", "--wiat", "5s"},
      {"lock", "a", "--wait", ""},
      {"lock", "a", "-w", ""},
      {"lock", "a", "--lease", ""},
      {"lock", "a", "--lease", "106753d"},
      {"lock", "a", "--wait", "200000d"},
      {"lock", "a", "-w", "1h30"},
      {"lock", "a", "-E", "0x1"},
      {"lock", "a", "-E", "abc"},
      {"lock", "a", "-E", "-1"},
      {"lock", "a", "-E", "256"},
      {"lock", "a", "-E", ""},
      {"exec", "a", "--lease", "inf", "--", "true"},
      {"--timeout", "", "inspect"},
      {"--connect-timeout", "", "inspect"},
      {"--password-file", "", "inspect"},
      {"--url", "redis://alice@127.0.0.1:1", "inspect"},  // an ACL user needs a password
  };
  for (auto args : cases) {
    args.insert(args.begin(), {"--url", "redis://127.0.0.1:1"});
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    CAPTURE(joined);
    std::string message;
    CHECK(usage_exit(args, &message) == rlock::kExitUsage);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("typos get a suggestion and a pointer to the help, words in order") {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"exce"}, "unknown subcommand 'exce' (did you mean 'exec'?); see rlock help"},
      {{"lokc", "x"}, "unknown subcommand 'lokc' (did you mean 'lock'?); see rlock help"},
      {{"zzzzzz"}, "unknown subcommand 'zzzzzz'; see rlock help"},
      {{"lock", "x", "--wiat", "5s"},
       "unknown option '--wiat' (did you mean '--wait'?); see rlock help lock"},
      {{"lock", "x", "--leese=5s"},
       "unknown option '--leese' (did you mean '--lease'?); see rlock help lock"},
      {{"--verbsoe", "inspect"},
       "unknown option '--verbsoe' (did you mean '--verbose'?); see rlock help inspect"},
      {{"latch", "await", "a", "b", "c"}, "unexpected argument 'b'; see rlock help latch"},
      {{"help", "exce"}, "help: unknown subcommand 'exce' (did you mean 'exec'?); see rlock help"},
      {{"inspect", "x", "redis://:S3cret@h"},
       "unexpected argument (a URL with userinfo, not repeated here; give it with --url); see "
       "rlock help inspect"},
      {{"redis://u:S3cret@h"},
       "unknown subcommand (a URL with userinfo, not repeated here; give it with --url); see rlock "
       "help"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    std::string message;
    CHECK(usage_exit(c.args, &message) == rlock::kExitUsage);
    CHECK(message == c.message);
  }
}

TEST_CASE("-E is decimal") {
  // 010 is ten, not octal eight: the lock is busy-checked only after a connection, so the
  // value is seen through the error of an unreachable server (69), not a usage error.
  CHECK(usage_exit({"--url", "redis://127.0.0.1:1", "lock", "a", "-E", "010"}) ==
        rlock::kExitUnavailable);
}

TEST_CASE("exec's missing -- is named") {
  std::string message;
  CHECK(usage_exit({"exec", "a", "true"}, &message) == rlock::kExitUsage);
  CHECK(message.find("missing '--'") != std::string::npos);
  CHECK(usage_exit({"exec", "a", "--"}, &message) == rlock::kExitUsage);
  CHECK(message.find("missing command after '--'") != std::string::npos);
}

TEST_CASE("an unknown option where a command may go is named as an option, not a missing --") {
  for (std::vector<std::string> args : {std::vector<std::string>{"exec", "a", "--bogus"},
                                        {"delay-pop", "q", "-n"},
                                        {"limit", "a", "--rate", "1", "--per", "1s", "--bogus"}}) {
    std::string message;
    CHECK(usage_exit(args, &message) == rlock::kExitUsage);
    CHECK(message == "unknown option '" + args.back() + "'; see rlock help " + args.front());
  }
  std::string message;
  CHECK(usage_exit({"delay-pop", "q", "cat"}, &message) == rlock::kExitUsage);
  CHECK(message.find("delay-pop: missing '--' before the command") == 0);
}

TEST_CASE("signals by name or number") {
  CHECK(rlock::exec::parse_signal("TERM") == SIGTERM);
  CHECK(rlock::exec::parse_signal("sigkill") == SIGKILL);
  CHECK(rlock::exec::parse_signal("SIGUSR1") == SIGUSR1);
  CHECK(rlock::exec::parse_signal("2") == SIGINT);
  CHECK_THROWS_AS(rlock::exec::parse_signal("0"), rlock::UsageError);
  CHECK_THROWS_AS(rlock::exec::parse_signal("SIGFOO"), rlock::UsageError);
  CHECK_THROWS_AS(rlock::exec::parse_signal(""), rlock::UsageError);
}
