#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace rlock::test {

// Every right of the ACL that rlock(1) documents (its ACL section), read from the page
// itself, so that the page and what the scripts need cannot drift apart.
inline std::vector<std::string> documented_rights() {
  std::ifstream man(RLOCK_SOURCE_DIR "/man/rlock.1");
  std::string line;
  while (std::getline(man, line) && line != ".SH ACL") {
  }
  while (std::getline(man, line) && line != ".EX") {
  }
  std::vector<std::string> rights;
  while (std::getline(man, line) && line != ".EE") {
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w.size() > 1 && w[0] == '+') rights.push_back(w.substr(1));
    }
  }
  return rights;
}

// `user rl` with password rlpw and exactly the documented rights (a redis.conf line).
inline std::string documented_acl_user() {
  std::string acl = "user rl on >rlpw resetkeys ~rlock:* resetchannels &rlock:* -@all";
  for (const auto& r : documented_rights()) acl += " +" + r;
  return acl;
}

}  // namespace rlock::test
