#include "redis/quorum_rule.hpp"

#include <map>
#include <mutex>

namespace rlock::redis {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, const QuorumRule*, std::less<>>& registry() {
  static std::map<std::string, const QuorumRule*, std::less<>> rules;
  return rules;
}

}  // namespace

std::vector<std::string_view> QuorumRule::for_every_member(
    const std::vector<std::string_view>& args, std::string& /*keep*/) const {
  return args;
}

void register_quorum_rule(std::string_view name, const QuorumRule& rule) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[std::string(name)] = &rule;
}

const QuorumRule* find_quorum_rule(std::string_view name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}

size_t QuorumVote::first(const std::function<bool(const Answer&)>& pred) const {
  for (size_t i = 0; i < size; ++i) {
    if (answers[i].main && pred(answers[i])) return i;
  }
  return size;
}

std::string QuorumVote::of_n() const {
  return " of the " + std::to_string(size) + " quorum members";
}

UnavailableError QuorumVote::unavailable(const std::string& what) const {
  std::string young;
  std::vector<bool> answered(size);
  for (size_t i = 0; i < size; ++i) {
    answered[i] = answers[i].main != nullptr;
    if (answered[i] && !answers[i].counts) young += (young.empty() ? "" : ", ") + io.member_name(i);
  }
  // (Every member may have answered: those not counted yet are named below.)
  const std::string missing = io.describe_missing(answered);
  std::string line = what + (missing.empty() ? "" : " (" + missing + ")");
  if (!young.empty()) {
    line += "; not counted until their data is older than the longest lease: " + young;
  }
  return UnavailableError(line);
}

std::string member_check_refusal_note(std::string_view refusal, bool request_refused) {
  const bool acl = refusal.substr(0, refusal.find(' ')) == "NOPERM";
  if (!acl || request_refused || refusal.starts_with("NOPERM rlock needs ")) return "";
  return " (the quorum's own keys rlock:quorum:*, the same whatever --prefix)";
}

}  // namespace rlock::redis
