// Read-write locks (`--shared`, as flock -s): readers together, a writer alone, readers'
// own leases, writers not starved, upgrade refused, downgrade allowed.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "harness.hpp"
#include "lib_util.hpp"

namespace rlock::test {
namespace {

// The probe every operation runs: this test binary started again with RLOCK_IT_PROBE set to
// "reader" or "writer" and RLOCK_IT_PROBE_FILE naming a counter file "readers writers
// max_readers violations". It enters (checks that nobody it excludes is inside, counts
// itself in), stays a moment, and leaves. The file is changed under flock(2), so the probe
// itself never races.
void probe_step(const char* path, bool writer, int delta) {
  int fd = ::open(path, O_RDWR);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(90);
  char buf[128] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  long r = 0, w = 0, max_r = 0, bad = 0;
  if (n > 0) std::sscanf(buf, "%ld %ld %ld %ld", &r, &w, &max_r, &bad);
  if (delta > 0 && (w > 0 || (writer && r > 0))) ++bad;
  (writer ? w : r) += delta;
  if (r > max_r) max_r = r;
  int len = std::snprintf(buf, sizeof buf, "%ld %ld %ld %ld\n", r, w, max_r, bad);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, buf, static_cast<size_t>(len), 0) != len) ::_exit(91);
  ::close(fd);
}

const bool kIsProbe = [] {
  const char* role = std::getenv("RLOCK_IT_PROBE");
  const char* path = std::getenv("RLOCK_IT_PROBE_FILE");
  if (!role || !path) return false;
  bool writer = std::strcmp(role, "writer") == 0;
  probe_step(path, writer, +1);
  ::usleep(writer ? 300 : 1000);
  probe_step(path, writer, -1);
  ::_exit(0);
}();

bool saw_line(Spawned& proc, const std::string& want) {
  const auto until = deadline(15s);
  while (auto line = proc.read_line(until)) {
    if (*line == want) return true;
  }
  return false;
}

// The waiters a majority of a quorum's members have queued (RedisServer::on_majority).
long long queued(const RedisServer& redis, const std::string& name) {
  return redis.on_majority({"ZCARD", lock_key(name) + ":waiters"});
}

TEST_CASE(
    "rw: 8 readers and 2 writers x 200 operations: no writer ever with anyone, readers together") {
  RedisServer redis;
  TempDir dir;
  const std::string counter = dir / "counter";
  write_file(counter, "0 0 0 0\n");
  const std::string loop =
      R"(i=0; while [ $i -lt 200 ]; do "$RL" --url "$URL" exec $MODE --wait 120s rw -- "$PROBE" || exit 1; )"
      R"(i=$((i+1)); done)";
  std::vector<Spawned> loops;
  for (int i = 0; i < 10; ++i) {
    bool writer = i < 2;
    loops.emplace_back(std::vector<std::string>{"sh", "-c", loop},
                       Env{{"RL", rlock_binary()},
                           {"URL", redis.topology_url()},
                           {"MODE", writer ? "" : "--shared"},
                           {"PROBE", std::filesystem::read_symlink("/proc/self/exe").string()},
                           {"RLOCK_IT_PROBE", writer ? "writer" : "reader"},
                           {"RLOCK_IT_PROBE_FILE", counter}});
  }
  for (auto& proc : loops) {
    auto status = proc.wait(deadline(300s));
    INFO("stderr: " << proc.err());
    REQUIRE(status.has_value());
    CHECK(*status == 0);
  }
  long r = -1, w = -1, max_r = -1, bad = -1;
  std::sscanf(read_file(counter).c_str(), "%ld %ld %ld %ld", &r, &w, &max_r, &bad);
  CHECK(bad == 0);    // never a writer with anyone else inside
  CHECK(max_r >= 2);  // readers overlapped
  CHECK(r == 0);
  CHECK(w == 0);
  CHECK(redis.cmd_int({"EXISTS", lock_key("rw")}) == 0);
  CHECK(redis.cmd_int({"EXISTS", std::string("rlock:lock-readers:{rw}")}) == 0);
}

TEST_CASE(
    "rw: a SIGKILLed reader blocks a writer no longer than its own lease + 1s, while another "
    "reader renews") {
  RedisServer redis;
  TempDir dir;
  auto hold = make_fifo(dir, "b");
  auto dead = spawn_rlock(redis, {"exec", "--shared", "--lease", "2s", "k", "--", "sh", "-c",
                                  "echo in; exec sleep 60"});
  REQUIRE(saw_line(dead, "in"));
  auto alive = spawn_rlock(redis, {"exec", "--shared", "--lease", "2s", "k", "--", "sh", "-c",
                                   "echo in; read x < " + hold});
  REQUIRE(saw_line(alive, "in"));
  dead.kill(SIGKILL);
  const auto killed_at = Clock::now();
  REQUIRE(dead.wait(deadline(5s)).has_value());
  // The live reader keeps renewing its own hold for 3s and leaves; the writer must get the
  // lock as soon as the dead reader's own lease is over, not later.
  auto writer = spawn_rlock(redis, {"lock", "k", "--owner", "w", "--wait", "20s"});
  REQUIRE(poll_until([&] { return queued(redis, "k") == 1; }, 10s));
  CHECK(writer.running());
  write_file(hold, "go\n", 0600);
  CHECK(alive.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(writer.wait(deadline(10s)).value_or(kStillRunning) == 0);
  CHECK(ms_between(killed_at, writer.exit_time()) <= 3'000 + 1'000);
  CHECK(hash_of(redis, lock_key("k")) == json::object({{"w", "1"}}));
}

TEST_CASE("rw: a writer arriving into a stream of readers gets in once the readers inside leave") {
  RedisServer redis;
  TempDir dir;
  auto hold = make_fifo(dir, "r");
  // The jobs write in the order they held the lock; their processes' exits can come in
  // either order (the writer's rlock still exits after handing the lock on).
  const std::string log = dir.path().string() + "/log";
  auto r1 = spawn_rlock(redis, {"exec", "-s", "s", "--", "sh", "-c", "echo in; read x < " + hold});
  REQUIRE(saw_line(r1, "in"));
  auto writer =
      spawn_rlock(redis, {"exec", "--wait", "20s", "s", "--", "sh", "-c", "echo writer >> " + log});
  REQUIRE(poll_until([&] { return queued(redis, "s") == 1; }, 10s));
  // A reader that comes after the writer queues behind it instead of joining the readers.
  auto late = rlock(redis, {"lock", "--shared", "s", "--owner", "late", "-n"});
  CHECK(late.status == 75);
  auto late_wait = spawn_rlock(
      redis, {"exec", "-s", "--wait", "20s", "s", "--", "sh", "-c", "echo late reader >> " + log});
  REQUIRE(poll_until([&] { return queued(redis, "s") == 2; }, 10s));
  write_file(hold, "go\n", 0600);
  REQUIRE(Spawned::wait_all({&r1, &writer, &late_wait}, deadline(20s)));
  CHECK(writer.wait(Clock::now()).value_or(kStillRunning) == 0);
  CHECK(late_wait.wait(Clock::now()).value_or(kStillRunning) == 0);
  CHECK(read_file(log) == "writer\nlate reader\n");
}

TEST_CASE("rw: a writer's release hands the lock to the run of readers at the head, all at once") {
  RedisServer redis;
  TempDir dir;
  REQUIRE(rlock(redis, {"lock", "h", "--owner", "w", "--lease", "60s"}).status == 0);
  auto all_in = make_fifo(dir, "all");
  // Each reader waits until the others are in too (a barrier of three), so none can finish
  // unless all three hold the lock at the same time.
  const std::string barrier = "echo in >> " + (dir / "log") + "; while [ $(wc -l < " +
                              (dir / "log") + ") -lt 3 ]; do sleep 0.01; done";
  std::vector<Spawned> readers;
  for (int i = 0; i < 3; ++i) {
    readers.push_back(
        spawn_rlock(redis, {"exec", "-s", "--wait", "20s", "h", "--", "sh", "-c", barrier}));
    REQUIRE(poll_until([&] { return queued(redis, "h") == i + 1; }, 10s));
  }
  REQUIRE(rlock(redis, {"unlock", "h", "--owner", "w"}).status == 0);
  for (auto& r : readers) CHECK(r.wait(deadline(10s)).value_or(kStillRunning) == 0);
}

TEST_CASE("rw: upgrade is refused at once, downgrade is allowed") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "-s", "u", "--owner", "o"}).status == 0);
  auto up = rlock(redis, {"lock", "u", "--owner", "o", "--wait", "10s"});
  CHECK(up.status == 65);
  CHECK(line_count(up.err) == 1);
  CHECK(up.elapsed < 5s);
  CHECK(redis.cmd_int({"EXISTS", lock_key("u")}) == 0);
  CHECK(redis.cmd_int({"HLEN", std::string("rlock:lock-readers:{u}")}) == 1);
  CHECK(rlock(redis, {"unlock", "-s", "u", "--owner", "o"}).status == 0);

  // Downgrade: the writer takes the read lock, then drops the write hold and keeps reading.
  auto w = rlock(redis, {"lock", "d", "--owner", "o"});
  REQUIRE(w.status == 0);
  const auto fence = parse_json(w.out).at("fence").get<long long>();
  auto r = rlock(redis, {"lock", "-s", "d", "--owner", "o"});
  REQUIRE(r.status == 0);
  CHECK(parse_json(r.out).at("fence") == fence);
  CHECK(rlock(redis, {"unlock", "d", "--owner", "o"}).status == 0);
  CHECK(rlock(redis, {"lock", "d", "--owner", "other", "-n"}).status == 75);  // a reader is in
  CHECK(rlock(redis, {"lock", "-s", "d", "--owner", "other", "-n"}).status == 0);
  // Fences advance on fresh exclusive acquisitions only.
  CHECK(rlock(redis, {"unlock", "--force", "d"}).status == 0);
  auto w2 = rlock(redis, {"lock", "d", "--owner", "o"});
  CHECK(parse_json(w2.out).at("fence").get<long long>() > fence);
}

TEST_CASE("rw: bad combinations and a forced unlock of readers") {
  RedisServer redis;
  auto r = rlock(redis, {"exec", "-s", "--min-hold", "5s", "m", "--", "true"});
  CHECK(r.status == 64);
  CHECK(line_count(r.err) == 1);
  CHECK(redis.cmd_int({"DBSIZE"}) == 0);
  REQUIRE(rlock(redis, {"lock", "-s", "f", "--owner", "a"}).status == 0);
  REQUIRE(rlock(redis, {"lock", "-s", "f", "--owner", "b"}).status == 0);
  CHECK(rlock(redis, {"unlock", "f", "--owner", "a"}).status == 75);  // not an exclusive holder
  auto forced = rlock(redis, {"unlock", "--force", "f"});
  CHECK(forced.status == 0);
  CHECK(parse_json(forced.out).at("holders").size() == 2);
  CHECK(redis.cmd_int({"EXISTS", std::string("rlock:lock-readers:{f}")}) == 0);
  CHECK(rlock(redis, {"lock", "f", "--owner", "c", "-n"}).status == 0);
}

}  // namespace
}  // namespace rlock::test

namespace rlock::test {
namespace {

TEST_CASE("rw: inspect shows readers with their own leases, also when no writer holds the lock") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "-s", "shared-only", "--owner", "r1", "--lease", "20s"}).status ==
          0);
  REQUIRE(rlock(redis, {"lock", "-s", "shared-only", "--owner", "r2", "--lease", "40s"}).status ==
          0);
  auto listed = parse_json(rlock(redis, {"inspect"}).out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].at("name") == "shared-only");
  CHECK(listed[0].at("mode") == "shared");
  REQUIRE(listed[0].at("holders").size() == 2);
  auto leases = std::vector<long long>{listed[0]["holders"][0]["lease_ms"],
                                       listed[0]["holders"][1]["lease_ms"]};
  std::sort(leases.begin(), leases.end());
  CHECK(leases[0] <= 20'000);
  CHECK(leases[1] > 20'000);
}

// A writer's release grants the run of readers at the head at once; of the rest of the
// queue only the writer next in line hears from it (to look again when the readers' claim
// window ends, in case they never claim).
TEST_CASE("rwlock: a hand-off to readers wakes them and the next writer, not the whole queue") {
  RedisServer redis;
  REQUIRE(rlock(redis, {"lock", "k", "--owner", "holder", "--lease", "60s"}).status == 0);
  std::vector<Spawned> waiters;
  for (int i = 0; i < 8; ++i) {
    std::vector<std::string> args{"lock", "k", "--owner", "w" + std::to_string(i), "--wait", "60s"};
    if (i < 3) args.push_back("--shared");
    waiters.push_back(spawn_rlock(redis, args));
    REQUIRE(poll_until([&] { return live_waiters(redis, "k") == i + 1; }, 10s));
  }
  const std::string channel = lock_channel("k");
  const auto grants = grant_channels(redis, lock_key("k") + ":waiters", channel, 2);
  REQUIRE(grants.size() == 8);
  auto channels = grants;
  channels.push_back(channel);
  const Heard heard = heard_during_paused(
      redis, channels, waiters,
      [&] {
        CHECK(rlock(redis, {"unlock", "k", "--owner", "holder"}).status == 0);
      },
      [&](const RedisServer& m) {
        return m.cmd_int({"HEXISTS", lock_key("k"), "holder"}) == 0;
      });
  CHECK(heard == Heard{{grants[0], {"grant"}},
                       {grants[1], {"grant"}},
                       {grants[2], {"grant"}},
                       {grants[3], {"changed 2000"}}});
}

}  // namespace
}  // namespace rlock::test
