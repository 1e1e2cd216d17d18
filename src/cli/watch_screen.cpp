#include "cli/watch_screen.hpp"

#include <algorithm>

namespace rlock::cli {

std::string screen_frame(const std::vector<std::string>& top, const std::vector<std::string>& rows,
                         TerminalSize size) {
  const size_t columns = size.columns > 1 ? size.columns - 1 : 1;
  std::vector<std::string> shown(top.begin(), top.begin() + std::min(top.size(), size.rows));
  const size_t room = size.rows - shown.size();
  if (rows.size() <= room) {
    shown.insert(shown.end(), rows.begin(), rows.end());
  } else if (room > 0) {
    const size_t kept = room - 1;
    shown.insert(shown.end(), rows.begin(), rows.begin() + static_cast<long>(kept));
    shown.push_back("… " + std::to_string(rows.size() - kept) + " more");
  }
  std::string out = "\033[H";
  for (size_t i = 0; i < shown.size(); ++i) {
    out += fit_columns(shown[i], columns) + "\033[K";
    if (i + 1 < shown.size()) out += "\r\n";
  }
  return out + "\033[J";
}

}  // namespace rlock::cli
