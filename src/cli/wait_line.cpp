#include "cli/wait_line.hpp"

#include <unistd.h>

#include "cli/terminal.hpp"
#include "util/one_line.hpp"

namespace rlock::cli {
namespace {

constexpr Millis kTick{500};
constexpr std::string_view kErase = "\r\033[K";

Millis since(Deadline t) { return std::chrono::duration_cast<Millis>(SteadyClock::now() - t); }

}  // namespace

std::shared_ptr<WaitLine> WaitLine::on_terminal(bool quiet, std::string subject) {
  if (quiet || !isatty(STDERR_FILENO)) return nullptr;
  return std::make_shared<WaitLine>(std::move(subject));
}

WaitLine::WaitLine(std::string subject) : subject_(one_line(subject)) {}

WaitLine::~WaitLine() { stop(); }

void WaitLine::update(const prim::Waitable::Step& step, Millis wait_left) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  step_ = step;
  seen_ = SteadyClock::now();
  forever_ = wait_left > kMaxDuration / 2;
  until_ = seen_ + (forever_ ? Millis(0) : wait_left);
  draw();
  if (!timer_.joinable()) timer_ = std::thread([this] { tick(); });
}

void WaitLine::above(const std::function<void()>& write) {
  std::lock_guard lock(mutex_);
  erase();
  write();
}

void WaitLine::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !timer_.joinable()) return;
    stopping_ = true;
    erase();
  }
  wake_.notify_all();
  if (timer_.joinable()) timer_.join();
}

void WaitLine::tick() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kTick, [this] { return stopping_; });
    if (!stopping_) draw();
  }
}

std::string WaitLine::text() const {
  const Millis elapsed = since(seen_);
  std::string line = "waiting for " + subject_;
  if (!step_.summary.empty()) line += ": " + one_line(step_.summary);
  if (step_.due_in.count() >= 0) {
    line += ": next item due in " + format_duration(std::max(Millis(0), step_.due_in - elapsed));
  }
  if (step_.ttl_is_lease && step_.holder_ttl.count() >= 0) {
    line +=
        " (lease " + format_duration(std::max(Millis(0), step_.holder_ttl - elapsed)) + " left)";
  }
  if (step_.ahead == 0) line += ", next in line";
  if (step_.ahead > 0) line += ", " + std::to_string(step_.ahead) + " ahead of you";
  if (forever_) {
    line += ", no time limit";
  } else {
    line += ", " + format_duration(std::max(Millis(0), millis_until(until_))) + " left of --wait";
  }
  return line;
}

void WaitLine::draw() {
  if (stopping_ || !in_foreground(STDERR_FILENO)) return;
  write_terminal(STDERR_FILENO,
                 std::string(kErase) + fit_columns(text(), usable_columns(STDERR_FILENO)));
  shown_ = true;
}

void WaitLine::erase() {
  if (!shown_) return;
  shown_ = false;
  if (in_foreground(STDERR_FILENO)) write_terminal(STDERR_FILENO, kErase);
}

prim::WaitHooks WaitLine::attach(std::shared_ptr<WaitLine> line, prim::WaitHooks hooks) {
  if (!line) return hooks;
  hooks.on_wait = [line, prev = hooks.on_wait](const prim::Waitable::Step& step, Millis left) {
    if (prev) line->above([&] { prev(step, left); });
    line->update(step, left);
  };
  if (hooks.on_reconnect) {
    hooks.on_reconnect = [line, prev = hooks.on_reconnect](const std::string& why) {
      line->above([&] { prev(why); });
    };
  }
  hooks.on_done = [line, prev = hooks.on_done] {
    line->stop();
    if (prev) prev();
  };
  return hooks;
}

}  // namespace rlock::cli
