#include "cli/raw_words.hpp"

#include <CLI/CLI.hpp>

namespace rlock::cli {
namespace {

// Control bytes no name, owner or option takes, so a stand-in is never a word's own text
// (a word that looks like one is stood in for as well).
constexpr char kMark = '\x1f';
constexpr std::string_view kTag = "\x1frlock-word-";

// What CLI11 (2.x, Option::_add_result) expands as a list: '[' ... ']'.
bool bracketed(std::string_view s) { return s.size() >= 2 && s.front() == '[' && s.back() == ']'; }

bool looks_like_stand_in(std::string_view s) { return s.find(kTag) != std::string_view::npos; }

}  // namespace

std::vector<std::string> RawWords::stand_in(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  out.reserve(words.size());
  auto replace = [this](std::string original) {
    std::string tag = std::string(kTag) + std::to_string(originals_.size()) + kMark;
    originals_.push_back(std::move(original));
    return tag;
  };
  for (const auto& w : words) {
    size_t eq = w.rfind("--", 0) == 0 ? w.find('=') : std::string::npos;
    if (eq != std::string::npos && !looks_like_stand_in(w.substr(0, eq)) &&
        (bracketed(std::string_view(w).substr(eq + 1)) || looks_like_stand_in(w.substr(eq + 1)))) {
      out.push_back(w.substr(0, eq + 1) + replace(w.substr(eq + 1)));
    } else if (bracketed(w) || looks_like_stand_in(w)) {
      out.push_back(replace(w));
    } else {
      out.push_back(w);
    }
  }
  return out;
}

std::string RawWords::restore(const std::string& text) const {
  if (originals_.empty()) return text;
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t tag = text.find(kTag, at);
    size_t digits = tag == std::string::npos ? tag : tag + kTag.size();
    size_t end = digits == std::string::npos ? digits : text.find(kMark, digits);
    size_t index = originals_.size();
    if (end != std::string::npos && end > digits && end - digits < 8 &&
        text.find_first_not_of("0123456789", digits) == end) {
      index = std::stoul(text.substr(digits, end - digits));
    }
    if (index >= originals_.size()) {
      size_t upto = tag == std::string::npos ? text.size() : tag + 1;
      out.append(text, at, upto - at);
      at = upto;
      continue;
    }
    out.append(text, at, tag - at);
    out += originals_[index];
    at = end + 1;
  }
  return out;
}

void RawWords::restore_options(CLI::App& app) const {
  if (originals_.empty()) return;
  for (CLI::Option* opt : app.get_options()) {
    // A transform runs first, before the option's own checks and conversion.
    opt->transform([this](std::string value) { return restore(value); });
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) restore_options(*sub);
}

}  // namespace rlock::cli
