#include "prim/delay_queue.hpp"

#include <algorithm>

#include "prim/object_script.hpp"
#include "redis/errors.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "redis/script_args.hpp"
#include "util/error.hpp"
#include "util/owner.hpp"

namespace rlock::prim {
namespace {

constexpr std::string_view kKind = "delayed queue";
constexpr size_t kPushFields = 5;  // id, payload, due, lateness, deliveries

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// The items of a pop reply {1, now, id, payload, due, lateness, deliveries, ...}.
std::vector<QueueItem> items_of(const redis::ReplyView& r) {
  std::vector<QueueItem> out;
  long long now = r.at(1).integer();
  for (size_t i = 2; i + kPushFields <= r.size(); i += kPushFields) {
    out.push_back({r.at(i).str(), r.at(i + 1).str(), r.at(i + 2).integer(), r.at(i + 3).integer(),
                   r.at(i + 4).integer(), now, "", false});
  }
  return out;
}

}  // namespace

// One pop as the shared waiting loop sees it: there is no queue of consumers and nothing
// to claim; the "holders' expiry" is the time until the earliest item is due (or a lease
// runs out), capped at kQueueRecheck, and a push of an earlier item publishes a wake-up.
class QueuePop : public Waitable {
  // Calls in a row of one attempt while the script says an item is due now and takes none.
  static constexpr int kAgainNow = 100;

 public:
  QueuePop(DelayQueue& q, long long count, bool lease, Millis visibility, long long max,
           std::string token, std::string consumer)
      : q_(q),
        count_(count),
        lease_(lease),
        visibility_(visibility),
        max_(max),
        token_(std::move(token)),
        consumer_(std::move(consumer)) {}

  Step attempt(Mode mode, Millis /*wait_left*/) override {
    acks_.judged_by_reply = after_queueing(mode);
    // One reply record per pop until a reply comes: a pop repeated after a lost reply (by
    // the topology, or by the waiting loop once the server is back) gets the same items
    // and deliveries, and counts no delivery twice. Its lease runs from the first send.
    auto reply = pop();
    // Nothing taken yet something due now: the script stopped at its bound of malformed
    // items buried, or of expired leases reclaimed (each call moves them on, so this
    // ends). Ask again at once rather than tell a pop without --wait "nothing due".
    for (int round = 0;
         round < kAgainNow && reply.at(0).integer() == 0 && reply.at(2).integer() == 0; ++round) {
      reply = pop();
    }
    if (reply.at(0).integer() == 1) {
      items_ = items_of(reply);
      if (acks_.short_of_wanted()) give_back_unacknowledged();
      return {true, Millis(0), {}, {}, -1};
    }
    long long next = reply.at(2).integer();
    Millis ttl = next < 0 ? kQueueRecheck : std::min(Millis(next), kQueueRecheck);
    std::string state = next < 0 ? "empty" : "next item due in " + format_duration(Millis(next));
    return {false, ttl, state, next < 0 ? state : "", -1, false, Millis(next < 0 ? -1 : next)};
  }

  std::vector<std::string> channels() const override { return {q_.channel_}; }

  // Nothing to give back: a taken item is the caller's, and a lease whose reply was lost
  // runs out by itself, after which the item is due again.
  void give_up() noexcept override {}

  std::vector<QueueItem>& items() { return items_; }
  Deadline sent() const { return sent_; }

 private:
  // A claim the replicas did not acknowledge (--sync-replicas) is undone before it is
  // reported: a leased item goes back as if no job ran (no delivery counted), taken items
  // are put back as a failed write to stdout puts them back.
  void give_back_unacknowledged() {
    std::string outcome;
    try {
      if (lease_) {
        LeasedItem leased;
        leased.item = items_.front();
        leased.token = token_;
        q_.finish(leased, DelayQueue::Finish::kUnrun, Millis(0));
        outcome = "the item it claimed was given back (no delivery counted)";
      } else {
        q_.put_back(items_, false);
        outcome = "the items it took were put back (no delivery counted)";
      }
    } catch (const Error& e) {
      outcome = std::string("giving back what it took failed too: ") + e.what();
    }
    require_acks(acks_, outcome);
  }

  // Each pop that got its reply has a fresh reply record; one whose reply was lost keeps
  // its record, so that its repeat gets what the first run took.
  redis::Reply pop() {
    acks_.about = "queue '" + q_.name() + "'";
    if (reply_key_.empty()) {
      reply_key_ = q_.new_reply_key();
      sent_ = SteadyClock::now();
    }
    using C = redis::contract::queue_pop;
    const std::string count = std::to_string(count_), visibility = millis_arg(visibility_),
                      max = std::to_string(max_), ttl = reply_record_ttl_arg(q_.topology_);
    auto reply = q_.run(redis::scripts::queue_pop,
                        redis::args_of<C>()
                            .set(C::kArgChannel, q_.channel_)
                            .set(C::kArgMode, lease_ ? "lease" : "take")
                            .set(C::kArgCount, count)
                            .set(C::kArgVisibilityMs, visibility)
                            .set(C::kArgMaxDeliveries, max)
                            .set(C::kArgToken, token_)
                            .set(C::kArgConsumer, consumer_)
                            .set(C::kArgReplyTtl, ttl)
                            .strings(),
                        redis::Retry::kIdempotent, reply_key_, &acks_);
    reply_key_.clear();
    return reply;
  }

  DelayQueue& q_;
  long long count_;
  bool lease_;
  Millis visibility_;
  long long max_;
  std::string token_;
  std::string consumer_;
  std::vector<QueueItem> items_;
  Deadline sent_{};
  std::string reply_key_;
  redis::Acks acks_;  // of the last pop
};

// A leased item, supervised like a lock: renewals extend the lease while this delivery
// still has it; release acknowledges (job ended with 0) or gives the item back.
class QueueLease : public Hold {
 public:
  QueueLease(DelayQueue& q, LeasedItem leased)
      : Hold(leased.visibility, 0, leased.deadline), q_(q), leased_(std::move(leased)) {}

  Renewed renew() override {
    Deadline sent = SteadyClock::now();
    redis::Acks acks;
    acks.about = "queue '" + q_.name() + "'";
    using C = redis::contract::queue_renew;
    const std::string visibility = millis_arg(lease_);
    auto reply = q_.run(redis::scripts::queue_renew,
                        redis::args_of<C>()
                            .set(C::kArgChannel, q_.channel_)
                            .set(C::kArgId, leased_.item.id)
                            .set(C::kArgToken, leased_.token)
                            .set(C::kArgVisibilityMs, visibility)
                            .strings(),
                        redis::Retry::kIdempotent, {}, &acks);
    if (reply.at(0).integer() == 1) {
      require_acks(acks, "the renewal of item '" + leased_.item.id + "' does not count");
      deadline_ = sent + lease_;
      return Renewed::kHeld;
    }
    return Renewed::kLost;
  }

  void job_ended(int exit_code) override { succeeded_ = exit_code == 0; }
  void job_not_started() override { started_ = false; }

  Released release(Millis /*keep*/) override {
    using F = DelayQueue::Finish;
    bool done = started_ ? q_.finish(leased_, succeeded_ ? F::kAck : F::kNack, lease_)
                         : q_.finish(leased_, F::kUnrun, Millis(0));
    return done ? Released::kReleased : Released::kNotHeld;
  }

  std::string lost_reason() const override {
    return "the lease on item '" + leased_.item.id + "' of queue '" + q_.name() +
           "' ran out (visibility " + format_duration(lease_) +
           "); the item may be with another consumer now, so it was not " +
           (succeeded_ ? "acknowledged" : "given back");
  }

 private:
  DelayQueue& q_;
  LeasedItem leased_;
  bool succeeded_ = false;  // until told otherwise (the job never started, or failed)
  bool started_ = true;     // until told that no job ran
};

namespace {

// lua/include/queue_common.lua's KEYS, which every queue script but queue_inspect takes
// first; a reply record comes right after them (DelayQueue::keys).
using QueueKeys = redis::contract::queue_renew;
static_assert(redis::contract::queue_pop::kKeyReply == QueueKeys::kNumKeys);
static_assert(redis::contract::queue_push::kKeyReply == QueueKeys::kNumKeys);
static_assert(redis::contract::queue_dead_pop::kKeyReply == QueueKeys::kNumKeys);

std::vector<std::string> queue_keys(const KeyLayout& layout, const std::string& name) {
  using C = QueueKeys;
  const std::string main = layout.queue_key(name), scheduled = layout.queue_scheduled_key(name),
                    payloads = layout.queue_items_key(name), metadata = layout.queue_meta_key(name),
                    in_flight = layout.queue_inflight_key(name),
                    leases = layout.queue_leases_key(name), dead = layout.queue_dead_key(name),
                    finished = layout.queue_finished_key(name);
  return redis::keys_of<C>()
      .set(C::kKeyMain, main)
      .set(C::kKeyScheduled, scheduled)
      .set(C::kKeyPayloads, payloads)
      .set(C::kKeyMetadata, metadata)
      .set(C::kKeyInFlight, in_flight)
      .set(C::kKeyLeases, leases)
      .set(C::kKeyDead, dead)
      .set(C::kKeyFinished, finished)
      .strings();
}

}  // namespace

DelayQueue::DelayQueue(redis::Topology& topology, const KeyLayout& layout, std::string name)
    : topology_(topology),
      name_(std::move(name)),
      keys_(queue_keys(layout, name_)),
      channel_(layout.queue_channel(name_)),
      reply_key_prefix_(layout.reply_key(name_, "")) {}

std::vector<std::string_view> DelayQueue::keys(const std::string& reply_key) const {
  auto k = views(keys_);
  if (!reply_key.empty()) k.push_back(reply_key);
  return k;
}

std::string DelayQueue::new_reply_key() const { return reply_key_prefix_ + random_hex(16); }

redis::Reply DelayQueue::run(const redis::Script& script, const std::vector<std::string>& args,
                             redis::Retry retry, const std::string& reply_key, redis::Acks* acks) {
  return run_object_script(topology_, script, keys(reply_key), views(args), kKind, retry, acks);
}

std::vector<std::string> DelayQueue::push_args(const std::string& mode, const std::string& due,
                                               const QueuePush& item,
                                               const std::string& ttl) const {
  using C = redis::contract::queue_push;
  return redis::args_of<C>()
      .set(C::kArgChannel, channel_)
      .set(C::kArgMode, mode)
      .set(C::kArgDue, due)
      .set(C::kArgId, item.id)
      .set(C::kArgPayload, item.payload)
      .set(C::kArgReplyTtl, ttl)
      .strings();
}

std::vector<Pushed> DelayQueue::push(const std::vector<QueuePush>& items, DueTime due) {
  using C = redis::contract::queue_push;
  const redis::Script& script = redis::scripts::queue_push;
  std::vector<std::string> prefix = {"EVALSHA", script.sha1, std::to_string(C::kNumKeys)};
  prefix.insert(prefix.end(), keys_.begin(), keys_.end());
  std::string mode = due.absolute ? "at" : "delay";
  std::string due_arg = std::to_string(due.ms);
  std::string ttl = reply_record_ttl_arg(topology_);
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::string> reply_keys;
  cmds.reserve(items.size());
  for (const auto& it : items) {
    auto cmd = prefix;
    // Each push its own reply record: the pipeline, repeated after a lost reply, queues
    // nothing twice and reports what the first run did.
    reply_keys.push_back(new_reply_key());
    cmd.push_back(reply_keys.back());
    for (auto& a : push_args(mode, due_arg, it, ttl)) cmd.push_back(std::move(a));
    cmds.push_back(std::move(cmd));
  }
  auto replies = topology_.pipeline(cmds, redis::Retry::kIdempotent, keys_.front());
  std::vector<Pushed> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const redis::Reply* r = &replies[i];
    std::optional<redis::Reply> again;
    if (r->is_error()) {
      // NOSCRIPT (the server had not cached it: EVAL below caches it) or a refusal, which
      // the script made before writing anything and which run() reports as it should.
      again.emplace(run(script, push_args(mode, due_arg, items[i], ttl), redis::Retry::kIdempotent,
                        reply_keys[i]));
      r = &*again;
    }
    out.push_back({items[i].id, r->at(1).integer(), r->at(0).integer() == 0});
  }
  return out;
}

std::vector<QueueItem> DelayQueue::take(long long count, Deadline until, const WaitHooks& hooks,
                                        bool* interrupted) {
  QueuePop pop(*this, count, false, Millis(0), 0, "", "");
  WaitOutcome outcome = wait_for(topology_, pop, until, hooks);
  if (interrupted) *interrupted = outcome == WaitOutcome::kInterrupted;
  if (outcome != WaitOutcome::kAcquired) return {};
  return std::move(pop.items());
}

std::optional<LeasedItem> DelayQueue::lease(Millis visibility, long long max_deliveries,
                                            const std::string& consumer, Deadline until,
                                            const WaitHooks& hooks, bool* interrupted) {
  std::string token = random_hex(16);
  QueuePop pop(*this, 1, true, visibility, max_deliveries, token, consumer);
  WaitOutcome outcome = wait_for(topology_, pop, until, hooks);
  if (interrupted) *interrupted = outcome == WaitOutcome::kInterrupted;
  if (outcome != WaitOutcome::kAcquired || pop.items().empty()) return std::nullopt;
  LeasedItem l;
  l.item = std::move(pop.items().front());
  l.token = std::move(token);
  l.visibility = visibility;
  l.deadline = pop.sent() + visibility;
  return l;
}

std::unique_ptr<Hold> DelayQueue::hold(const LeasedItem& leased) {
  return std::make_unique<QueueLease>(*this, leased);
}

bool DelayQueue::finish(const LeasedItem& leased, Finish how, Millis retry_after) {
  const char* word = how == Finish::kAck ? "ack" : how == Finish::kNack ? "nack" : "unrun";
  using C = redis::contract::queue_finish;
  const std::string retry_ms = millis_arg(retry_after);
  auto reply = run(redis::scripts::queue_finish,
                   redis::args_of<C>()
                       .set(C::kArgChannel, channel_)
                       .set(C::kArgId, leased.item.id)
                       .set(C::kArgToken, leased.token)
                       .set(C::kArgHow, word)
                       .set(C::kArgRetryMs, retry_ms)
                       .strings(),
                   redis::Retry::kIdempotent);
  bool done = reply.at(0).integer() == 1;
  // The reply came: no retry needs the finish's record any more. Best effort: a record
  // left behind expires (queue_common.lua).
  if (done) {
    try {
      using F = redis::contract::queue_forget;
      run(redis::scripts::queue_forget,
          redis::args_of<F>()
              .set(F::kArgChannel, channel_)
              .set(F::kArgToken, leased.token)
              .strings(),
          redis::Retry::kIdempotent);
    } catch (const Error&) {
    }
  }
  return done;
}

bool DelayQueue::give_back(const LeasedItem& leased) {
  return finish(leased, Finish::kUnrun, Millis(0));
}

std::vector<QueueItem> DelayQueue::take_dead(long long count) {
  using C = redis::contract::queue_dead_pop;
  const std::string most = std::to_string(count), ttl = reply_record_ttl_arg(topology_);
  auto reply = run(redis::scripts::queue_dead_pop,
                   redis::args_of<C>()
                       .set(C::kArgChannel, channel_)
                       .set(C::kArgCount, most)
                       .set(C::kArgReplyTtl, ttl)
                       .strings(),
                   redis::Retry::kIdempotent, new_reply_key());
  std::vector<QueueItem> out;
  long long now = reply.at(0).integer();
  for (size_t i = 1; i + 5 <= reply.size(); i += 5) {
    out.push_back({reply.at(i).str(), reply.at(i + 1).str(), reply.at(i + 2).integer(), 0,
                   reply.at(i + 3).integer(), now, reply.at(i + 4).str(),
                   reply.at(i + 1).is_nil()});
  }
  return out;
}

long long DelayQueue::put_back(const std::vector<QueueItem>& items, bool dead) {
  using C = redis::contract::queue_put_back;
  std::vector<std::string> fields;
  fields.reserve(7 * items.size());
  for (const auto& it : items) {
    // A taken item's delivery did not happen; it became due `lateness_ms` before the take.
    long long score = dead ? it.due_ms : it.now_ms - it.lateness_ms;
    long long deliveries = dead ? it.deliveries : std::max(it.deliveries - 1, 0LL);
    for (auto a : {it.id, std::string(it.no_payload ? "0" : "1"), it.payload, std::to_string(score),
                   std::to_string(it.due_ms), std::to_string(deliveries), it.reason}) {
      fields.push_back(std::move(a));
    }
  }
  const auto args = redis::args_of<C>()
                        .set(C::kArgChannel, channel_)
                        .set(C::kArgWhere, dead ? "dead" : "scheduled")
                        .add_rest(std::vector<std::string_view>(fields.begin(), fields.end()))
                        .strings();
  // Never resent (queue_put_back.lua): an item delivered twice breaks at-most-once.
  return run(redis::scripts::queue_put_back, args, redis::Retry::kNever).at(0).integer();
}

}  // namespace rlock::prim
