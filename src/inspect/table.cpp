#include "inspect/table.hpp"

#include <array>

#include "util/one_line.hpp"

namespace rlock::inspect {
namespace {

// TYPE, NAME, HOLDERS/COUNT, TTL, FENCE (16-digit tokens); WAITERS is last, unpadded.
constexpr std::array<size_t, 5> kWidth = {5, 20, 24, 7, 16};

std::string line(const std::array<std::string, 6>& cells) {
  std::string out;
  for (size_t c = 0; c < cells.size(); ++c) {
    out += cells[c];
    if (c + 1 == cells.size()) break;
    out.append(cells[c].size() < kWidth[c] ? kWidth[c] - cells[c].size() + 2 : 2, ' ');
  }
  return out + "\n";
}

}  // namespace

std::string table_header() {
  return line({"TYPE", "NAME", "HOLDERS/COUNT", "TTL", "FENCE", "WAITERS"});
}

std::string table_row(std::string_view type, std::string_view name, const TableCells& cells) {
  return line({std::string(type), one_line(name), one_line(cells.holders), one_line(cells.ttl),
               one_line(cells.fence), one_line(cells.waiters)});
}

}  // namespace rlock::inspect
