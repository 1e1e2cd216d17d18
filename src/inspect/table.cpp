#include "inspect/table.hpp"

#include <array>
#include <vector>

#include "util/one_line.hpp"

namespace rlock::inspect {
namespace {

// TYPE, NAME, HOLDERS/COUNT, TTL, FENCE (16-digit tokens), WAITERS; the last column
// (WAITERS, or MEMBER on a quorum) is unpadded.
constexpr std::array<size_t, 6> kWidth = {5, 20, 24, 7, 16, 7};

std::string line(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t c = 0; c < cells.size(); ++c) {
    out += cells[c];
    if (c + 1 == cells.size()) break;
    out.append(cells[c].size() < kWidth[c] ? kWidth[c] - cells[c].size() + 2 : 2, ' ');
  }
  return out + "\n";
}

}  // namespace

std::string table_header(bool quorum) {
  std::vector<std::string> titles = {"TYPE", "NAME", "HOLDERS/COUNT", "TTL", "FENCE", "WAITERS"};
  if (quorum) titles.push_back("MEMBER");
  return line(titles);
}

std::string table_row(std::string_view type, std::string_view name, const Decoded& decoded) {
  const TableCells& cells = decoded.cells;
  std::vector<std::string> row = {std::string(type),       one_line(name),
                                  one_line(cells.holders), one_line(cells.ttl),
                                  one_line(cells.fence),   one_line(cells.waiters)};
  // A quorum's listing (inspect/scan_stream.cpp) names the member and whether a majority of
  // the members agrees on who holds the object.
  auto member = decoded.json.find("member");
  if (member != decoded.json.end() && member->is_string()) {
    row.push_back(one_line(member->get<std::string>()) +
                  (decoded.json.value("majority", false) ? " majority" : " minority"));
  }
  std::string out = line(row);
  for (const auto& detail : decoded.detail_lines) out += one_line(detail) + "\n";
  return out;
}

}  // namespace rlock::inspect
