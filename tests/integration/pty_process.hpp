// A process on a pseudo-terminal of its own (PtyProcess): job control tests play the user.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "processes.hpp"
#include "timing.hpp"

namespace rlock::test {

// A process on the slave side of a fresh pseudo-terminal: the session leader, with the
// terminal as its controlling terminal and as stdin, stdout and stderr, so that an
// interactive shell run there has job control. The test plays the user on the master side.
// The destructor SIGKILLs it (by pid) and reaps it. Move-only.
class PtyProcess {
 public:
  explicit PtyProcess(const std::vector<std::string>& argv, const Env& env_extra = {});
  ~PtyProcess();
  PtyProcess(PtyProcess&&) noexcept;
  PtyProcess& operator=(PtyProcess&&) noexcept;

  pid_t pid() const;
  // Types `text` (e.g. "fg\n", or "\x1a" for ^Z).
  void send(std::string_view text);
  // Reads the terminal until `text` appears after the end of the previous match; true if it
  // did before the deadline.
  bool expect(std::string_view text, Clock::time_point deadline);
  // Reads the terminal until `done(output())` holds; true if it did before the deadline.
  bool await(const std::function<bool(const std::string&)>& done, Clock::time_point deadline);
  // Everything the terminal showed so far.
  const std::string& output() const;
  // Waits for the process to exit (see Spawned::wait); the terminal is read meanwhile.
  std::optional<int> wait(Clock::time_point deadline);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace rlock::test
