#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/scripts.hpp"

namespace rlock::redis {

// The KEYS or ARGV of one run of a script, built by name: each value goes to the position
// the script's header declares (redis::contract::<script>, generated from its `-- @key` and
// `-- @arg` lines), and list() throws std::logic_error when a position that must be given
// is empty, so that a value left out or put in the wrong place fails where the call is
// built instead of shifting every value after it. Values are views: they must outlive the
// list.
class ScriptArgs {
 public:
  // `what` names the list in errors ("lock_acquire ARGV"); positions [0, count) exist, the
  // first `required` must be given, and with `rest` the last one takes any number of values.
  ScriptArgs(std::string what, std::size_t count, std::size_t required, bool rest);

  // Puts `value` at position `at`; throws std::logic_error if it is taken or not declared
  // (or is the rest of ARGV, which add_rest fills).
  ScriptArgs& set(std::size_t at, std::string_view value);

  // Appends `values` to the rest of ARGV (a script declaring `NAME...`).
  ScriptArgs& add_rest(const std::vector<std::string_view>& values);

  // The list in order: the given positions, without a gap, then the rest of ARGV.
  std::vector<std::string_view> list() const;
  // list(), copied (for a clean-up that may outlive the values).
  std::vector<std::string> strings() const;

 private:
  std::string what_;
  std::size_t required_;
  bool rest_;
  std::vector<std::optional<std::string_view>> slots_;
  std::vector<std::string_view> tail_;
};

// The KEYS of a run of `Contract`'s script.
template <class Contract>
ScriptArgs keys_of() {
  return ScriptArgs(std::string(Contract::kName) + " KEYS", Contract::kNumKeys,
                    Contract::kNumKeysRequired, false);
}

// The ARGV of a run of `Contract`'s script.
template <class Contract>
ScriptArgs args_of() {
  return ScriptArgs(std::string(Contract::kName) + " ARGV", Contract::kNumArgs,
                    Contract::kNumArgsRequired, Contract::kTakesRest);
}

}  // namespace rlock::redis
