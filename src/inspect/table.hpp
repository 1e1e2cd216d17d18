#pragma once

#include <string>
#include <string_view>

#include "inspect/object_type.hpp"

namespace rlock::inspect {

// `--format table` while streaming: columns TYPE NAME HOLDERS/COUNT TTL FENCE WAITERS of
// fixed widths (rows are printed before the next ones are known), and on a quorum MEMBER
// (the member, and "majority" or "minority": whether a majority agrees on who holds it); a
// longer cell pushes the rest of its row right, with two spaces before the next cell.
// Cells are escaped with one_line, so that a row stays one line whatever bytes other
// clients stored.
std::string table_header(bool quorum = false);
std::string table_row(std::string_view type, std::string_view name, const Decoded& decoded);

}  // namespace rlock::inspect
