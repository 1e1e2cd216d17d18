#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace rlock::cli {

// CLI11 reads a word "[a,b]" given to a list option (the lock names, sem --permit) as the
// list a, b, and "[prod]" as prod: a name is the bytes given, so such words reach CLI11 as
// stand-ins that every option maps back before it checks or stores a value.
class RawWords {
 public:
  // The words with each one CLI11 would split (whole, or the VALUE of --opt=VALUE)
  // replaced by a stand-in; a word that looks like a stand-in is replaced too.
  std::vector<std::string> stand_in(const std::vector<std::string>& words);
  // Makes every option of `app` and its subcommands take the original word.
  void restore_options(CLI::App& app) const;
  // `text` (a word or a message) with each stand-in in it replaced by its word.
  std::string restore(const std::string& text) const;

 private:
  std::vector<std::string> originals_;
};

}  // namespace rlock::cli
