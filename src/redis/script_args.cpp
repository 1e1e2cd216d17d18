#include "redis/script_args.hpp"

#include <stdexcept>

namespace rlock::redis {

ScriptArgs::ScriptArgs(std::string what, std::size_t count, std::size_t required, bool rest)
    : what_(std::move(what)), required_(required), rest_(rest), slots_(count) {}

ScriptArgs& ScriptArgs::set(std::size_t at, std::string_view value) {
  const std::size_t fixed = slots_.size() - (rest_ ? 1 : 0);
  if (at >= fixed) {
    throw std::logic_error(what_ + ": no position " + std::to_string(at) + " to set");
  }
  if (slots_[at]) throw std::logic_error(what_ + ": position " + std::to_string(at) + " set twice");
  slots_[at] = value;
  return *this;
}

ScriptArgs& ScriptArgs::add_rest(const std::vector<std::string_view>& values) {
  if (!rest_) throw std::logic_error(what_ + ": takes no rest of ARGV");
  tail_.insert(tail_.end(), values.begin(), values.end());
  return *this;
}

std::vector<std::string_view> ScriptArgs::list() const {
  const std::size_t fixed = slots_.size() - (rest_ ? 1 : 0);
  std::vector<std::string_view> out;
  out.reserve(fixed + tail_.size());
  for (std::size_t i = 0; i < fixed; ++i) {
    if (slots_[i]) {
      if (out.size() != i) {
        throw std::logic_error(what_ + ": position " + std::to_string(out.size()) +
                               " is empty before position " + std::to_string(i));
      }
      out.push_back(*slots_[i]);
    } else if (i < required_) {
      throw std::logic_error(what_ + ": position " + std::to_string(i) + " was not given");
    }
  }
  if (!tail_.empty() && out.size() != fixed) {
    throw std::logic_error(what_ + ": the rest of ARGV follows an empty position");
  }
  out.insert(out.end(), tail_.begin(), tail_.end());
  return out;
}

std::vector<std::string> ScriptArgs::strings() const {
  const std::vector<std::string_view> views = list();
  return std::vector<std::string>(views.begin(), views.end());
}

}  // namespace rlock::redis
