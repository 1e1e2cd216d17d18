#include "inspect/table.hpp"

#include <algorithm>

#include "util/duration.hpp"
#include "util/one_line.hpp"

namespace rlock::inspect {
namespace {

std::string holders_cell(const LockView& v) {
  if (!v.error.empty()) return "(" + v.error + ")";
  std::string out;
  for (const auto& h : v.holders) {
    if (!out.empty()) out += ",";
    out += one_line(h.owner) + " (x" + std::to_string(h.count) + ")";
  }
  return out;
}

}  // namespace

std::string render_table(const std::vector<LockView>& views) {
  std::vector<std::vector<std::string>> rows = {
      {"TYPE", "NAME", "HOLDERS", "TTL", "FENCE", "WAITERS"}};
  for (const auto& v : views) {
    // Names and owners written by other clients may hold control characters or bytes that
    // are not UTF-8: escaped, so that a row stays one row.
    rows.push_back({"lock", one_line(v.name), holders_cell(v),
                    v.ttl_ms < 0 ? "-" : format_duration(Millis(v.ttl_ms)),
                    v.fence ? std::to_string(*v.fence) : "-", std::to_string(v.waiters)});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace rlock::inspect
