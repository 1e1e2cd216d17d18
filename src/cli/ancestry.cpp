#include "cli/ancestry.hpp"

#include <cstdlib>

#include "util/error.hpp"
#include "util/name.hpp"

namespace rlock::cli {
namespace {

constexpr size_t kHoldIdDigits = 16;

bool is_hold_id(std::string_view id) {
  if (id.size() != kHoldIdDigits) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string encode_owner(const std::string& owner) {
  std::string out;
  for (char c : owner) {
    if (c == '%')
      out += "%25";
    else if (c == ' ')
      out += "%20";
    else
      out += c;
  }
  return out;
}

// The owner of an entry, or false when it is not one rlock would have written.
bool decode_owner(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    std::string_view code = in.substr(i, 3);
    if (code == "%25")
      out += '%';
    else if (code == "%20")
      out += ' ';
    else
      return false;
    i += 2;
  }
  try {
    validate_owner(out);
  } catch (const UsageError&) {
    return false;
  }
  return true;
}

}  // namespace

std::vector<prim::AncestorHold> parse_holds(std::string_view value) {
  std::vector<prim::AncestorHold> holds;
  while (!value.empty()) {
    size_t end = value.find(' ');
    std::string_view entry = value.substr(0, end);
    value = end == std::string_view::npos ? std::string_view() : value.substr(end + 1);
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos || !is_hold_id(entry.substr(0, colon))) continue;
    prim::AncestorHold h;
    h.id = std::string(entry.substr(0, colon));
    if (!decode_owner(entry.substr(colon + 1), h.owner)) continue;
    holds.push_back(std::move(h));
  }
  if (holds.size() > kMaxAncestors) holds.erase(holds.begin(), holds.end() - kMaxAncestors);
  return holds;
}

std::string holds_for_job(std::vector<prim::AncestorHold> inherited, prim::AncestorHold own) {
  return holds_for_job_several(std::move(inherited), {std::move(own)});
}

std::string holds_for_job_several(std::vector<prim::AncestorHold> inherited,
                                  const std::vector<prim::AncestorHold>& own) {
  inherited.insert(inherited.end(), own.begin(), own.end());
  size_t from = inherited.size() > kMaxAncestors ? inherited.size() - kMaxAncestors : 0;
  std::string out;
  for (size_t i = from; i < inherited.size(); ++i)
    out += (out.empty() ? "" : " ") + inherited[i].id + ":" + encode_owner(inherited[i].owner);
  return out;
}

std::vector<prim::AncestorHold> inherited_holds() {
  const char* v = std::getenv(kHoldsVariable);
  return v == nullptr ? std::vector<prim::AncestorHold>() : parse_holds(v);
}

}  // namespace rlock::cli
