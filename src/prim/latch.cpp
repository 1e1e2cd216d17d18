#include "prim/latch.hpp"

#include <algorithm>

#include "prim/object_script.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/owner.hpp"
#include "util/yield_to_server.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "latch";

// A latch's change cannot be given back as a hold can: taking a count-down back would race
// with the others' (a latch that reached 0 has opened already). It stands, and is reported.
const char* const kLatchChangeStands =
    "the change stands (a failover to a replica that missed it would undo it)";

}  // namespace

// `latch await`: an attempt "acquires" when the count is 0. It takes nothing, so there is
// nothing to give back and no queue to keep a place in.
class LatchWait : public Waitable {
 public:
  explicit LatchWait(Latch& latch) : latch_(latch) {}

  Step attempt(Mode, Millis) override {
    LatchState s = latch_.read(false);
    // Redisson deletes its latch at zero: a missing one is open, as RCountDownLatch.await
    // takes it.
    if ((s.exists || latch_.redisson_) && s.count == 0) return {true, Millis(0), {}, {}, -1};
    std::string state = s.exists ? "count " + std::to_string(s.count) : "not set";
    return {false, Millis(-1), state, state, -1};
  }

  std::vector<std::string> channels() const override { return {latch_.channel_}; }
  // Java publishes "0" with PUBLISH unless Redisson runs in its sharded mode.
  std::vector<std::string> classic_channels() const override {
    if (!latch_.redisson_) return {};
    return {latch_.channel_};
  }

  void give_up() noexcept override {}

 private:
  Latch& latch_;
};

template <class Contract>
std::vector<std::string_view> Latch::keys(const std::string& reply_key) const {
  return redis::keys_of<Contract>()
      .set(Contract::kKeyCount, key_)
      .set(Contract::kKeyIds, ids_key_)
      .set(Contract::kKeyReply, reply_key)
      .list();
}

Latch::Latch(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      name_(std::move(name)),
      key_(layout.latch_key(name_)),
      ids_key_(layout.latch_ids_key(name_)),
      channel_(layout.latch_channel(name_)),
      reply_key_prefix_(layout.reply_key(name_, "")),
      redisson_(layout.redisson_latch()) {}

LatchSet Latch::set(long long count, Millis expire, bool force) {
  std::string n = std::to_string(count),
              ms = std::to_string(std::max<long long>(expire.count(), 0));
  std::string reply_key = reply_key_prefix_ + random_hex(16);
  redis::Acks acks;
  acks.about = "latch '" + name_ + "'";
  using C = redis::contract::latch_set;
  const std::string ttl = reply_record_ttl_arg(topology_);
  auto reply = run_object_script(topology_, redis::scripts::latch_set, keys<C>(reply_key),
                                 redis::args_of<C>()
                                     .set(C::kArgCount, n)
                                     .set(C::kArgExpireMs, ms)
                                     .set(C::kArgForce, force ? "1" : "0")
                                     .set(C::kArgChannel, channel_)
                                     .set(C::kArgReplyTtl, ttl)
                                     .set(C::kArgRedisson, redisson_ ? "1" : "0")
                                     .list(),
                                 kKind, redis::Retry::kIdempotent, &acks);
  LatchSet r;
  r.set = reply.at(0).integer() == 1;
  if (!r.set) {
    r.count = reply.at(1).integer();
    return r;
  }
  require_acks(acks, kLatchChangeStands);
  r.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
  r.count = count;
  long long previous = reply.at(1).integer();
  if (previous >= 0) r.previous = previous;
  return r;
}

LatchCountDown Latch::count_down(long long amount, const std::string& id) {
  std::string by = std::to_string(amount), keep = std::to_string(kLatchReachedRetention.count());
  // Repeated after a lost reply, the request gets the reply of its first run (what this
  // call applied and whether it reached 0), not the id's "repeated".
  std::string reply_key = reply_key_prefix_ + random_hex(16);
  YieldToServer yield;  // the count may reach 0 and open the latch with the reply
  redis::Acks acks;
  acks.about = "latch '" + name_ + "'";
  using C = redis::contract::latch_count_down;
  const std::string ttl = reply_record_ttl_arg(topology_);
  auto reply = run_object_script(topology_, redis::scripts::latch_count_down, keys<C>(reply_key),
                                 redis::args_of<C>()
                                     .set(C::kArgAmount, by)
                                     .set(C::kArgId, id)
                                     .set(C::kArgChannel, channel_)
                                     .set(C::kArgKeepMs, keep)
                                     .set(C::kArgReplyTtl, ttl)
                                     .set(C::kArgRedisson, redisson_ ? "1" : "0")
                                     .list(),
                                 kKind, redis::Retry::kIdempotent, &acks);
  LatchCountDown r;
  switch (reply.at(0).integer()) {
    case 1:
      r.outcome = LatchCountDown::Outcome::kCounted;
      r.count = reply.at(1).integer();
      r.applied = reply.at(2).integer();
      r.reached = r.applied > 0 && r.count == 0;
      require_acks(acks, kLatchChangeStands);
      r.replicas_acked = acks.wanted > 0 ? acks.acked : -1;
      break;
    case 2:
      r.outcome = LatchCountDown::Outcome::kRepeated;
      r.count = reply.at(1).integer();
      break;
    default:
      r.outcome = LatchCountDown::Outcome::kMissing;
  }
  return r;
}

LatchState Latch::read(bool with_ids, const LatchIdsPage& page) {
  const std::string cursor = page.cursor.empty() ? "0" : page.cursor;
  const std::string limit = std::to_string(page.limit);
  using C = redis::contract::latch_read;
  auto reply = run_object_script(
      topology_, redis::scripts::latch_read,
      redis::keys_of<C>().set(C::kKeyCount, key_).set(C::kKeyIds, ids_key_).list(),
      redis::args_of<C>()
          .set(C::kArgWithIds, with_ids ? "1" : "0")
          .set(C::kArgCursor, cursor)
          .set(C::kArgLimit, limit)
          .list(),
      kKind, redis::Retry::kIdempotent);
  LatchState s;
  if (reply.at(0).integer() == 0) return s;
  s.exists = true;
  s.count = reply.at(1).integer();
  s.ttl_ms = reply.at(2).integer();
  s.ids_total = reply.at(3).integer();
  if (with_ids && reply.at(4).str() != "0") s.next = reply.at(4).str();
  for (size_t i = 5; i < reply.size(); ++i) s.ids.push_back(reply.at(i).str());
  std::sort(s.ids.begin(), s.ids.end());
  return s;
}

bool Latch::await(Deadline until, const WaitHooks& hooks) {
  LatchWait wait(*this);
  return wait_for(topology_, wait, until, hooks) == WaitOutcome::kAcquired;
}

LatchState read_latch(redis::Topology& topology, const KeyLayout& layout, const std::string& name,
                      bool with_ids, const LatchIdsPage& page) {
  return Latch(topology, layout, name).read(with_ids, page);
}

}  // namespace rlock::prim
