#pragma once

#include <string>
#include <vector>

#include "cli/terminal.hpp"

namespace rlock::cli {

// One frame of a full-screen display: the `top` lines (a header, column titles), then as
// many of `rows` as fit the height, drawn over the previous frame from the top-left corner
// (each line erased to its end, the rest of the screen erased below), each line cut to the
// usable width. When the rows do not all fit, the last line says "… N more" for those left
// out. Nothing is written to the last column nor past the last line, so the screen never
// scrolls.
std::string screen_frame(const std::vector<std::string>& top, const std::vector<std::string>& rows,
                         TerminalSize size);

}  // namespace rlock::cli
