// `rlock elect --observe NAME`: one JSON line per change of the lock's leader, from the
// lock as inspect reads it, woken by the lock scripts' announcements (lock_common.lua's
// announce_holder), by releases, and at the lease the last read saw (a leader that stops
// renewing is gone then): the shared waiting loop, whose "attempt" here is that read.
#include "cli/elect_observe.hpp"

#include <optional>
#include <string>
#include <vector>

#include "cli/console.hpp"
#include "cli/settings.hpp"
#include "cli/stop_signals.hpp"
#include "inspect/scan_stream.hpp"
#include "inspect/types.hpp"
#include "prim/wait.hpp"
#include "util/duration.hpp"

namespace rlock::cli {
namespace {

using inspect::Json;

// The exclusive holder of one decoded lock, or null; `pending` when it is a reservation its
// waiter has not claimed yet (its claim announces it: not a leader until then).
Json leader_of(const Json& lock, bool& pending) {
  if (!lock.contains("holders")) return nullptr;
  for (const auto& h : lock["holders"]) {
    if (h.value("shared", false)) continue;
    const Json& grant = lock["grant"];
    pending = grant.is_object() && grant.value("owner", Json()) == h["owner"];
    return {{"owner", h["owner"]},
            {"note", h.value("note", Json())},
            {"fence", lock["fence"]},
            {"since", h.value("acquired_at", Json())}};
  }
  return nullptr;
}

// A quorum's members agree on who leads; each dates the hold by its own clock, and a
// member that missed the write-back of the token may show an older one: the leader is
// dated by the earliest member and has the highest token (what the quorum handed out).
void merge_member(Json& leader, const Json& member) {
  if (member["fence"].is_number() &&
      (!leader["fence"].is_number() || member["fence"] > leader["fence"])) {
    leader["fence"] = member["fence"];
  }
  // RFC 3339 UTC with milliseconds throughout: the text orders as the time does.
  if (member["since"].is_string() &&
      (!leader["since"].is_string() || member["since"] < leader["since"])) {
    leader["since"] = member["since"];
  }
}

// What a change of leader is: another owner, note or token; not the date a quorum member
// read at random gives it.
Json identity(const Json& leader) {
  if (leader.is_null()) return leader;
  Json id = leader;
  id.erase("since");
  return id;
}

class LeaderWatch final : public prim::Waitable {
 public:
  LeaderWatch(redis::Topology& topology, const prim::KeyLayout& layout, std::string name)
      : topology_(topology),
        layout_(layout),
        name_(std::move(name)),
        channels_{layout.lock_channel(name_), layout.observe_channel(name_)} {}

  // One read of the lock (on a quorum: the holder a majority of the members agree on).
  Step attempt(Mode, Millis) override {
    std::vector<inspect::Shown> shown;
    inspect::read_object(topology_, layout_, inspect::lock_type(), {name_, layout_.lock_key(name_)},
                         [&](const std::vector<inspect::Shown>& batch) {
                           shown.insert(shown.end(), batch.begin(), batch.end());
                         });
    Json leader = nullptr;
    bool pending = false, disputed = false;
    long long ttl = -1;
    for (const auto& s : shown) {
      const Json& j = s.decoded.json;
      const long long t = j.value("ttl_ms", -1LL);
      if (t >= 0 && (ttl < 0 || t < ttl)) ttl = t;
      // A quorum's members that disagree (a hand-off that reached some of them): no
      // change until a majority agrees, whichever way.
      if (!j.value("majority", true)) {
        disputed = true;
        continue;
      }
      bool reserved = false;
      Json one = leader_of(j, reserved);
      if (leader.is_null()) {
        leader = std::move(one);
        pending = reserved;
      } else if (!one.is_null() && one["owner"] == leader["owner"]) {
        merge_member(leader, one);
      }
    }
    if (!pending && !(disputed && leader.is_null())) leader_ = std::move(leader);
    Step step;
    step.holder_ttl = Millis(ttl);
    step.summary = leader_.is_null() ? "nobody leads" : "led by " + leader_["owner"].dump();
    return step;
  }
  std::vector<std::string> channels() const override { return channels_; }
  void give_up() noexcept override {}  // it only reads

  const Json& leader() const { return leader_; }

 private:
  redis::Topology& topology_;
  const prim::KeyLayout& layout_;
  std::string name_;
  std::vector<std::string> channels_;
  Json leader_ = nullptr;
};

}  // namespace

int run_elect_observe(const std::string& name, redis::Topology& topology,
                      const prim::KeyLayout& layout, const Console& console) {
  LeaderWatch watch(topology, layout, name);
  std::optional<Json> printed;
  prim::WaitHooks hooks;
  hooks.on_wait = [&](const prim::Waitable::Step&, Millis) {
    if (printed && *printed == identity(watch.leader())) return;
    printed = identity(watch.leader());
    console.result({{"name", name}, {"leader", watch.leader()}});
  };
  hooks.on_reconnect = [&](const std::string& why) {
    console.explain("reconnecting to go on observing '" + name + "': " + why);
  };
  StopSignals stops;
  hooks = stops.attach(std::move(hooks));
  const Deadline forever = SteadyClock::now() + parse_duration("inf", "--observe", true);
  prim::wait_for(topology, watch, forever, hooks);
  return 0;  // INT, TERM, HUP or QUIT: the end the user asked for
}

}  // namespace rlock::cli
