#include "prim/ancestry.hpp"

namespace rlock::prim {

std::string ancestry_arg(const std::vector<AncestorHold>& holds) {
  std::string out;
  for (const auto& h : holds) out += (out.empty() ? "" : "\n") + h.id + " " + h.owner;
  return out;
}

const AncestorHold* find_ancestor(const std::vector<AncestorHold>& holds, const std::string& id) {
  for (const auto& h : holds) {
    if (h.id == id) return &h;
  }
  return nullptr;
}

}  // namespace rlock::prim
