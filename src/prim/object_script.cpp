#include "prim/object_script.hpp"

#include <algorithm>
#include <string>

#include "redis/errors.hpp"

namespace rlock::prim {

redis::Reply run_object_script(redis::Topology& topology, const redis::Script& script,
                               const std::vector<std::string_view>& keys,
                               const std::vector<std::string_view>& args,
                               std::string_view object_kind, redis::Retry retry, redis::Acks* acks,
                               const std::vector<std::string_view>* resend_args) {
  try {
    if (acks) {
      redis::Synced synced = topology.run_synced(script, keys, args, retry, acks->about,
                                                 acks->judged_by_reply, resend_args);
      *acks = synced.acks;
      return std::move(synced.reply);
    }
    return topology.run(script, keys, args, retry, std::nullopt, resend_args);
  } catch (const redis::ReplyError& e) {
    const std::string& msg = e.reply();
    std::string kind(object_kind);
    if (e.code() == "BADTYPE") {
      size_t type_start = msg.find(' ') + 1;
      size_t type_end = msg.find(' ', type_start);
      std::string type = msg.substr(type_start, type_end - type_start);
      std::string key = type_end == std::string::npos ? "?" : msg.substr(type_end + 1);
      throw DataError("key '" + key + "' holds a " + type + ", not a " + kind +
                      "; rlock will not overwrite it (delete it, or use another name or --prefix)");
    }
    if (e.code() == "MALFORMED") {
      throw DataError("key '" + msg.substr(msg.find(' ') + 1) + "' of this " + kind +
                      " holds malformed data; inspect it with redis-cli before deleting it");
    }
    throw;
  }
}

void require_acks(const redis::Acks& acks, const std::string& outcome) {
  if (!acks.short_of_wanted()) return;
  throw redis::ReplicationError(acks.about + ": " + acks.describe() + "; " + outcome);
}

std::string reply_record_ttl_arg(const redis::Topology& topology) {
  return std::to_string(
      std::max(kReplyRecordFloor, topology.options().command_timeout + kReplyRecordMargin).count());
}

}  // namespace rlock::prim
