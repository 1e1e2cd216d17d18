#include "doctor/checks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "redis/errors.hpp"
#include "util/duration.hpp"
#include "util/error.hpp"

namespace rlock::doctor {

Fields info(redis::Topology& t, const std::string& section) {
  return info_fields(t.command({"INFO", section}, redis::Retry::kIdempotent).str());
}

std::optional<std::string> config(redis::Topology& t, const std::string& name,
                                  std::string& refusal) {
  try {
    redis::Reply r = t.command({"CONFIG", "GET", name}, redis::Retry::kIdempotent);
    if (r.is_array() && r.size() == 2) return r.at(1).str();
    refusal = "no such setting";
  } catch (const redis::ReplyError& e) {
    refusal = e.reply();
  }
  return std::nullopt;
}

long long number(const Fields& f, const std::string& name, long long otherwise) {
  auto it = f.find(name);
  if (it == f.end()) return otherwise;
  return std::strtoll(it->second.c_str(), nullptr, 10);
}

std::string field(const Fields& f, const std::string& name) {
  auto it = f.find(name);
  return it == f.end() ? std::string() : it->second;
}

}  // namespace rlock::doctor
