#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redis/script.hpp"
#include "redis/topology.hpp"

namespace rlock::prim {

// Runs a primitive's script and turns its "BADTYPE <type> <key>" / "MALFORMED <key>"
// error replies into DataError (exit 65) naming the key and `object_kind` ("lock", ...).
// With `acks`, the script is a write that takes or renews something: it is sent with
// Topology::run_synced (for acks->about) and `acks` receives what the replicas said
// (--sync-replicas). `resend_args`: see Topology::run.
redis::Reply run_object_script(redis::Topology& topology, const redis::Script& script,
                               const std::vector<std::string_view>& keys,
                               const std::vector<std::string_view>& args,
                               std::string_view object_kind,
                               redis::Retry retry = redis::Retry::kNever,
                               redis::Acks* acks = nullptr,
                               const std::vector<std::string_view>* resend_args = nullptr);

// Throws ReplicationError (exit 69) when `acks` are short of --sync-replicas: one line
// naming the object (acks.about: "lock 'x'"), the numbers, and `outcome` (what became of
// the change).
void require_acks(const redis::Acks& acks, const std::string& outcome);

// How long the server keeps a request's reply record (KeyLayout::reply_key), as the
// script argument `once` in lua/include/common.lua takes: the request and every repeat of
// it are sent within one --timeout budget, so a record that outlives the budget by a
// margin (for the repeats a stalled server runs late) answers them all, and is gone soon
// after instead of piling up (a limiter deciding 1000 calls/s kept 60,000 such keys at
// 60s). At least kReplyRecordFloor. What it leaves open: an original request held up on
// its way longer than that (in a dead flow, a proxy) runs again as a new request when it
// finally arrives after the record expired.
inline constexpr Millis kReplyRecordMargin{2000};
inline constexpr Millis kReplyRecordFloor{5000};
std::string reply_record_ttl_arg(const redis::Topology& topology);

}  // namespace rlock::prim
