// `rlock limit`: GCRA on the server clock. Accuracy under many processes (also with skewed
// client clocks), per-client and overall limits together, --reconfigure and what a limited
// call reports (limit_cli_test.cpp has the rest).
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness.hpp"
#include "limit_helpers.hpp"
#include "reply_records.hpp"

namespace rlock::test {
namespace {

// The most of the sorted `times` (ms) inside any window [t, t + width).
size_t max_in_window(std::vector<long long> times, long long width) {
  std::sort(times.begin(), times.end());
  size_t most = 0;
  for (size_t i = 0, j = 0; i < times.size(); ++i) {
    while (j < times.size() && times[j] < times[i] + width) ++j;
    most = std::max(most, j - i);
  }
  return most;
}

// Server times (now_ms) of the decisions printed one JSON line each in `path` that were
// allowed (or, with allowed false, refused).
std::vector<long long> decision_times(const std::string& path, bool allowed = true) {
  std::vector<long long> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) continue;  // a line cut by the stop
    if (!j.contains("allowed") || !j.at("now_ms").is_number()) continue;
    if (j.at("allowed").get<bool>() == allowed) out.push_back(j.at("now_ms").get<long long>());
  }
  return out;
}

std::vector<long long> allowed_times(const std::string& path) { return decision_times(path); }

// Shell loops, one per entry of `wrappers` (a prefix such as "faketime -f +1h", or ""),
// each running `rlock limit <args[i]>` back to back (args may use $(...), read each round)
// until stop(), which returns the server times of the allowed decisions of each loop.
class Hammer {
 public:
  Hammer(const RedisServer& redis, const std::vector<std::string>& wrappers,
         const std::vector<std::string>& args) {
    for (size_t i = 0; i < wrappers.size(); ++i) {
      std::string loop = "while [ ! -e \"$D/stop\" ]; do " + wrappers[i] +
                         " \"$RL\" --url \"$URL\" limit " + args[i] + " >> \"$D/out." +
                         std::to_string(i) + "\" 2>/dev/null; done; exit 0";
      loops_.emplace_back(
          std::vector<std::string>{"sh", "-c", loop},
          Env{{"RL", rlock_binary()}, {"URL", redis.topology_url()}, {"D", dir_.path().string()}});
    }
  }

  std::vector<std::vector<long long>> stop() {
    write_file(dir_ / "stop", "");
    std::vector<std::vector<long long>> out;
    for (size_t i = 0; i < loops_.size(); ++i) {
      CHECK(loops_[i].wait(deadline(10s)).value_or(kStillRunning) == 0);
      out.push_back(allowed_times(dir_ / ("out." + std::to_string(i))));
    }
    return out;
  }

  // After stop(): the server times of every loop's refused decisions.
  std::vector<long long> refused() const {
    std::vector<long long> out;
    for (size_t i = 0; i < loops_.size(); ++i) {
      auto times = decision_times(dir_ / ("out." + std::to_string(i)), false);
      out.insert(out.end(), times.begin(), times.end());
    }
    return out;
  }

  // Where the loops run: their args may read files put here.
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::vector<Spawned> loops_;
};

// What an exact GCRA (one call per `interval_ms`, burst 1) would have done with the calls
// made, in server time order: how many it would have allowed that the limiter refused, and
// how many the limiter allowed before it would have. `tolerance_ms` covers now_ms being
// whole milliseconds of the server's microseconds.
struct Replayed {
  size_t refused_but_due = 0;
  size_t allowed_early = 0;
};
Replayed replay_gcra(const std::vector<long long>& allowed, const std::vector<long long>& refused,
                     double interval_ms, double tolerance_ms) {
  // Within one millisecond the allowed call came first: refused, a call cannot have come
  // before an allowed one that the same state would have let through.
  std::vector<std::pair<long long, int>> calls;  // (now_ms, 0 allowed | 1 refused)
  for (long long t : allowed) calls.emplace_back(t, 0);
  for (long long t : refused) calls.emplace_back(t, 1);
  std::sort(calls.begin(), calls.end());
  Replayed r;
  double tat = 0;  // when the next call is due
  for (const auto& [t, refused_call] : calls) {
    if (refused_call) {
      if (static_cast<double>(t) >= tat + tolerance_ms) ++r.refused_but_due;
      continue;
    }
    if (static_cast<double>(t) + tolerance_ms < tat) ++r.allowed_early;
    tat = std::max(tat, static_cast<double>(t)) + interval_ms;
  }
  return r;
}

// 8 processes hammer one limiter of 18/s for 30s. What is checked holds however busy the
// CPUs are (the callers may make fewer calls than the rate then, or in bursts that waste
// turns no limiter could give back): no 1000ms window (server clock) holds more than 18 +
// burst allowed calls, nor the whole run more than the rate allows; and replayed against
// an exact GCRA in server time, every call it refused came before it was due and none it
// allowed came early.
void check_accuracy(const std::vector<std::string>& wrappers) {
  RedisServer redis;
  auto start = Clock::now();
  Hammer hammer(redis, wrappers,
                std::vector<std::string>(wrappers.size(), "acc --rate 18 --per 1s"));
  std::this_thread::sleep_for(30s);  // the run's length, not a synchronisation
  auto per_loop = hammer.stop();
  double seconds = ms_between(start) / 1000.0;
  std::vector<long long> all;
  for (size_t i = 0; i < per_loop.size(); ++i) {
    CAPTURE(wrappers[i]);
    CHECK(!per_loop[i].empty());  // every clock took part
    all.insert(all.end(), per_loop[i].begin(), per_loop[i].end());
  }
  std::vector<long long> refused = hammer.refused();
  CAPTURE(all.size());
  CAPTURE(refused.size());
  CAPTURE(seconds);
  CHECK(max_in_window(all, 1000) <= 18 + 1);
  CHECK(all.size() <= static_cast<size_t>(18 * seconds) + 1);
  CHECK(!refused.empty());  // the callers asked for more than the rate: it was put to the test
  Replayed r = replay_gcra(all, refused, 1000.0 / 18, 2);
  CHECK(r.refused_but_due == 0);
  CHECK(r.allowed_early == 0);
}

}  // namespace

TEST_CASE(
    "limit: 8 processes for 30s never exceed 18/s + burst in any 1s window, refusing no call "
    "that was due") {
  check_accuracy(std::vector<std::string>(8, ""));
}

TEST_CASE("limit: the same bounds when half the callers' clocks are 1h ahead and half 1h behind") {
  std::vector<std::string> wrappers;
  for (int i = 0; i < 8; ++i) wrappers.push_back(i % 2 ? "faketime -f +1h" : "faketime -f -1h");
  check_accuracy(wrappers);
}

TEST_CASE("limit: per-client and overall limits hold together") {
  RedisServer redis;
  std::vector<std::string> args;
  for (int i = 0; i < 6; ++i)
    args.push_back("pc --rate 20 --per 1s --client c" + std::to_string(i) + " --client-rate 5");
  Hammer hammer(redis, std::vector<std::string>(6, ""), args);
  std::this_thread::sleep_for(4s);
  // Looked at while the hammering keeps the buckets drained: once it stops, the keys live
  // only until every bucket is full again (a loaded machine's inspect came after that).
  auto inspected = parse_json(rlock(redis, {"inspect", "--type", "limiter"}).out);
  auto per_client = hammer.stop();
  std::vector<long long> all;
  for (size_t i = 0; i < per_client.size(); ++i) {
    CAPTURE(i);
    CHECK(max_in_window(per_client[i], 1000) <= 5 + 1);
    CHECK(per_client[i].size() >= 5);
    all.insert(all.end(), per_client[i].begin(), per_client[i].end());
  }
  CAPTURE(all.size());
  CHECK(max_in_window(all, 1000) <= 20 + 1);
  // No lock-out: at least half the overall rate got through (six hammering processes on
  // a loaded 2-core machine made 61 calls allowed of 80 in one run; a bucket that stays
  // empty lets through a handful).
  CHECK(all.size() >= static_cast<size_t>(0.5 * 20 * 4));
  REQUIRE(inspected.size() == 1);
  CHECK(inspected[0].at("client_rate") == 5);
  CHECK(inspected[0].at("client_buckets").get<long long>() >= 1);
}

TEST_CASE("limit: a call consumes from both buckets or from neither") {
  RedisServer redis;
  auto with = [&](const std::string& name, const std::string& rate, const std::string& burst,
                  const std::string& client, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {name, "--client", client, "--rate",        rate, "--per",
                                  "1s", "--burst",  burst,  "--client-rate", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // The client's bucket is empty, the overall one (100/s) is not: nothing is consumed.
  const auto first_call = std::chrono::steady_clock::now();
  decide(redis, with("both", "100", "2", "a"));
  decide(redis, with("both", "100", "2", "a"));
  const std::string tat = redis.cmd_str({"HGET", limiter_key("both"), "tat"});
  auto limited = decide(redis, with("both", "100", "2", "a"), 75);
  // The client's bucket (1/s) refills a second after the first call, the overall one in
  // 10 ms: what is left of that second, however long the calls took, says which limited.
  const long long since_first = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - first_call)
                                    .count();
  CHECK(limited.at("retry_after_ms").get<long long>() >= 1000 - since_first);
  CHECK(limited.at("retry_after_ms").get<long long>() > 10);
  CHECK(redis.cmd_str({"HGET", limiter_key("both"), "tat"}) == tat);
  decide(redis, with("both", "100", "2", "b", {"--wait", "1s"}));  // overall refills in 10ms
  CHECK(redis.cmd_int({"ZCARD", clients_key("both")}) == 2);

  // The overall bucket (1/s, burst 1) is empty: a fresh client is refused, its bucket not made.
  decide(redis, with("both2", "1", "1", "c"));
  const std::string score = redis.cmd_str({"ZSCORE", clients_key("both2"), "c"});
  decide(redis, with("both2", "1", "1", "d"), 75);
  CHECK(redis.cmd_str({"ZSCORE", clients_key("both2"), "d"}).empty());
  CHECK(redis.cmd_str({"ZSCORE", clients_key("both2"), "c"}) == score);
  auto rows = parse_json(rlock(redis, {"inspect", "--type", "limiter", "both2"}).out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("client_buckets") == 1);
  CHECK(rows[0].at("tokens") == 0);
  CHECK(rows[0].at("rate") == 1);
  CHECK(rows[0].at("per_ms") == 1000);
  CHECK(rows[0].at("burst") == 1);
  CHECK(rows[0].at("client_rate") == 1);
  auto table = rlock(redis, {"--format", "table", "inspect", "--type", "limiter", "both2"});
  CHECK(table.out.find("limiter  both2") != std::string::npos);
}

TEST_CASE(
    "limit: --reconfigure 10/s -> 100/s -> 10/s keeps every window within the rate in force") {
  RedisServer redis;
  const std::vector<std::string> args(4, "rc --rate $(cat \"$D/rate\") --per 1s --burst 2");
  // Phases of 3s each (the schedule of the run, not a synchronisation). Until the first
  // rate is written the loops' calls are usage errors and change nothing.
  Hammer hammer(redis, std::vector<std::string>(4, ""), args);
  const TempDir& dir = hammer.dir();
  auto switch_to = [&](int rate, bool reconfigure) {
    std::vector<std::string> a = {"rc",      "--rate", std::to_string(rate), "--per", "1s",
                                  "--burst", "2"};
    if (reconfigure) a.push_back("--reconfigure");
    auto r = rlock(redis, [&] {
      std::vector<std::string> argv = {"limit"};
      argv.insert(argv.end(), a.begin(), a.end());
      return argv;
    }());
    INFO(r.err);
    REQUIRE((r.status == 0 || r.status == 75));
    write_file(dir / "rate", std::to_string(rate));
    auto j = parse_json(r.out);
    return std::make_pair(j.at("now_ms").get<long long>(), j.at("allowed").get<bool>());
  };
  std::vector<std::pair<long long, bool>> switches;
  switches.push_back(switch_to(10, false));
  std::this_thread::sleep_for(3s);
  switches.push_back(switch_to(100, true));
  std::this_thread::sleep_for(3s);
  switches.push_back(switch_to(10, true));
  std::this_thread::sleep_for(3s);
  auto per_loop = hammer.stop();
  std::vector<long long> all, refused = hammer.refused();
  for (const auto& l : per_loop) all.insert(all.end(), l.begin(), l.end());
  for (const auto& [at, allowed] : switches) (allowed ? all : refused).push_back(at);
  const int rates[] = {10, 100, 10};
  const long long end = *std::max_element(all.begin(), all.end()) + 1;
  for (int p = 0; p < 3; ++p) {
    long long from = switches[p].first, to = p < 2 ? switches[p + 1].first : end;
    std::vector<long long> in_phase;
    for (long long t : all)
      if (t >= from && t < to) in_phase.push_back(t);
    size_t refused_in_phase = static_cast<size_t>(std::count_if(
        refused.begin(), refused.end(), [&](long long t) { return t >= from && t < to; }));
    CAPTURE(p);
    CAPTURE(in_phase.size());
    CAPTURE(refused_in_phase);
    CHECK(max_in_window(in_phase, 1000) <= static_cast<size_t>(rates[p] + 2));
    // No lock-out: the rate in force is used, as far as the calls made allow. On a busy
    // machine 4 loops may not reach 100 calls/s; a limiter still at 10/s would then allow
    // about a sixth of them, far below this bound.
    const size_t calls = in_phase.size() + refused_in_phase;
    const size_t reachable =
        std::min(static_cast<size_t>(0.6 * rates[p] * (to - from) / 1000), calls * 6 / 10);
    CHECK(in_phase.size() >= reachable);
  }
}

TEST_CASE("limit: --reconfigure converts every client's bucket too: no free burst") {
  RedisServer redis;
  auto with = [&](const std::string& rate, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"pc",      "--rate", rate,       "--per", "1h",
                                  "--burst", "10",     "--client", "a"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  for (int i = 0; i < 10; ++i) decide(redis, with("100"));
  decide(redis, with("100"), 75);
  // Its burst used up at 100/h, client a has none left at 10/h either (the per-client
  // bucket keeps its used fraction as the overall one does) ...
  auto slower = decide(redis, with("10", {"--reconfigure"}), 75);
  CHECK(slower.at("remaining") == 0);
  CHECK(slower.at("retry_after_ms").get<long long>() > 350'000);  // one token at 10/h
  CHECK(slower.at("retry_after_ms").get<long long>() <= 360'000);
  // ... and back at 100/h it waits one token of 100/h, not more (no lock-out).
  auto faster = decide(redis, with("100", {"--reconfigure"}), 75);
  CHECK(faster.at("retry_after_ms").get<long long>() > 35'000);
  CHECK(faster.at("retry_after_ms").get<long long>() <= 36'000);
  CHECK(redis.cmd_int({"ZCARD", clients_key("pc")}) == 1);
}

TEST_CASE("limit: a limited call reports when its buckets are full again, as they are") {
  RedisServer redis;
  // The overall bucket (10 per 10s, burst 2) is full; client a's (5 per 10s) refills in 1s.
  auto time = redis.cmd({"TIME"});
  long long now_us = std::stoll(time.at(0)) * 1'000'000 + std::stoll(time.at(1));
  redis.cmd({"HSET", limiter_key("rs"), "rate", "10", "per_ms", "10000", "burst", "2", "per_client",
             "1", "client_rate", "5"});
  redis.cmd({"ZADD", clients_key("rs"), std::to_string(now_us + 1'000'000), "a"});
  auto j = decide(redis,
                  {"rs", "--rate", "10", "--per", "10s", "--burst", "2", "--cost", "2", "--client",
                   "a", "--client-rate", "5"},
                  75);
  // Nothing was consumed: the overall bucket stays full, so all is full when a's is.
  CHECK(j.at("retry_after_ms").get<long long>() <= 1000);
  CHECK(j.at("reset_after_ms") == j.at("retry_after_ms"));
}

}  // namespace rlock::test
