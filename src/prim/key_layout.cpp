#include "prim/key_layout.hpp"

#include "util/error.hpp"

namespace rlock::prim {
namespace {

// The prefix is literal text inside a glob: escape what SCAN MATCH would interpret.
std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

const char* encoded(char c) {
  switch (c) {
    case '%':
      return "%25";
    case '{':
      return "%7B";
    case '}':
      return "%7D";
    default:
      return nullptr;
  }
}

std::string encode(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  for (char c : name) {
    if (const char* e = encoded(c)) {
      out += e;
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{' || text[i] == '}') return std::nullopt;
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    std::string_view code = text.substr(i, 3);
    if (code == "%25") {
      out += '%';
    } else if (code == "%7B") {
      out += '{';
    } else if (code == "%7D") {
      out += '}';
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  return out;
}

}  // namespace

KeyLayout::KeyLayout(std::string prefix) : prefix_(std::move(prefix)) {
  if (prefix_.find_first_of("{}") != std::string::npos) {
    throw UsageError("--prefix '" + prefix_ +
                     "' contains a brace; braces would split an object's keys over cluster slots");
  }
}

std::string KeyLayout::tag(std::string_view name) {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "{" + s + "}".
  std::string out = "{";
  out.append(encode(name)).push_back('}');
  return out;
}

std::string KeyLayout::lock_key(std::string_view name) const {
  return prefix_ + "lock:" + tag(name);
}
std::string KeyLayout::fence_key(std::string_view name) const { return lock_key(name) + ":fence"; }
std::string KeyLayout::waiters_key(std::string_view name) const {
  return lock_key(name) + ":waiters";
}
std::string KeyLayout::timeouts_key(std::string_view name) const {
  return lock_key(name) + ":timeouts";
}
std::string KeyLayout::grant_key(std::string_view name) const { return lock_key(name) + ":grant"; }
std::string KeyLayout::exec_key(std::string_view name) const { return lock_key(name) + ":exec"; }
// Ends with the tag, as a lock's own key does, so that one SCAN finds a lock held only by
// readers too.
std::string KeyLayout::readers_key(std::string_view name) const {
  std::string key = prefix_ + "lock-readers:";
  key.append(tag(name));
  return key;
}
std::string KeyLayout::reader_grants_key(std::string_view name) const {
  return lock_key(name) + ":rgrants";
}

std::string KeyLayout::reader_expiries_key(std::string_view name) const {
  return lock_key(name) + ":rexp";
}

std::string KeyLayout::notes_key(std::string_view name) const { return lock_key(name) + ":notes"; }
std::string KeyLayout::policy_key(std::string_view name) const {
  return lock_key(name) + ":policy";
}

std::string KeyLayout::superseded_key(std::string_view name) const {
  return lock_key(name) + ":superseded";
}

std::string KeyLayout::request_key(std::string_view name, std::string_view id) const {
  return lock_key(name) + ":req:" + std::string(id);
}

std::string KeyLayout::reply_key(std::string_view name, std::string_view id) const {
  return prefix_ + "req:" + tag(name) + ":" + std::string(id);
}

std::string KeyLayout::lock_channel(std::string_view name) const {
  return prefix_ + "chan:" + tag(name) + ":lock";
}

std::string KeyLayout::grant_channel(std::string_view name, std::string_view wait_id) const {
  return lock_channel(name) + ":" + std::string(wait_id);
}

std::string KeyLayout::observe_channel(std::string_view name) const {
  return lock_channel(name) + ":observe";
}

std::string KeyLayout::holder_channel(std::string_view name) const {
  return lock_channel(name) + ":holder";
}

std::string KeyLayout::sem_key(std::string_view name) const { return prefix_ + "sem:" + tag(name); }
std::string KeyLayout::sem_config_key(std::string_view name) const {
  return sem_key(name) + ":cfg";
}
std::string KeyLayout::sem_holders_key(std::string_view name) const {
  return sem_key(name) + ":holders";
}
std::string KeyLayout::sem_waiters_key(std::string_view name) const {
  return sem_key(name) + ":waiters";
}
std::string KeyLayout::sem_timeouts_key(std::string_view name) const {
  return sem_key(name) + ":timeouts";
}
std::string KeyLayout::sem_grants_key(std::string_view name) const {
  return sem_key(name) + ":grants";
}
std::string KeyLayout::sem_notes_key(std::string_view name) const {
  return sem_key(name) + ":notes";
}
std::string KeyLayout::sem_request_key(std::string_view name, std::string_view id) const {
  return sem_key(name) + ":req:" + std::string(id);
}
std::string KeyLayout::sem_channel(std::string_view name) const {
  return prefix_ + "chan:" + tag(name) + ":sem";
}
std::string KeyLayout::sem_grant_channel(std::string_view name, std::string_view wait_id) const {
  return sem_channel(name) + ":" + std::string(wait_id);
}

std::string KeyLayout::latch_key(std::string_view name) const {
  return prefix_ + "latch:" + tag(name);
}
std::string KeyLayout::latch_ids_key(std::string_view name) const {
  return latch_key(name) + ":ids";
}
std::string KeyLayout::latch_channel(std::string_view name) const {
  return prefix_ + "chan:" + tag(name) + ":latch";
}

std::string KeyLayout::limiter_key(std::string_view name) const {
  return prefix_ + "limit:" + tag(name);
}
std::string KeyLayout::limiter_clients_key(std::string_view name) const {
  return limiter_key(name) + ":clients";
}
std::string KeyLayout::queue_key(std::string_view name) const {
  return prefix_ + "queue:" + tag(name);
}
std::string KeyLayout::queue_scheduled_key(std::string_view name) const {
  return queue_key(name) + ":sched";
}
std::string KeyLayout::queue_items_key(std::string_view name) const {
  return queue_key(name) + ":items";
}
std::string KeyLayout::queue_meta_key(std::string_view name) const {
  return queue_key(name) + ":meta";
}
std::string KeyLayout::queue_inflight_key(std::string_view name) const {
  return queue_key(name) + ":inflight";
}
std::string KeyLayout::queue_leases_key(std::string_view name) const {
  return queue_key(name) + ":leases";
}
std::string KeyLayout::queue_dead_key(std::string_view name) const {
  return queue_key(name) + ":dead";
}
std::string KeyLayout::queue_finished_key(std::string_view name) const {
  return queue_key(name) + ":finished";
}
std::string KeyLayout::queue_channel(std::string_view name) const {
  return prefix_ + "chan:" + tag(name) + ":queue";
}

std::string KeyLayout::runs_key(std::string_view name) const {
  return prefix_ + "runs:" + tag(name);
}
std::string KeyLayout::runs_key_pattern(std::string_view name_glob) const {
  return key_pattern("runs", name_glob);
}
std::optional<std::string> KeyLayout::runs_name(std::string_view key) const {
  return name_in("runs", key);
}

std::string KeyLayout::key_pattern(std::string_view word, std::string_view name_glob) const {
  // Literal braces and '%' of the glob match their encoded form in the key.
  std::string glob;
  for (char c : name_glob) {
    if (const char* e = encoded(c)) {
      glob += e;
    } else {
      glob += c;
    }
  }
  return glob_escape(prefix_) + std::string(word) + ":{" + glob + "}";
}

std::optional<std::string> KeyLayout::name_in(std::string_view word, std::string_view key) const {
  std::string head = prefix_ + std::string(word) + ":{";
  if (key.size() <= head.size() || key.substr(0, head.size()) != head || key.back() != '}') {
    return std::nullopt;
  }
  return decode(key.substr(head.size(), key.size() - head.size() - 1));
}

std::string KeyLayout::lock_key_pattern(std::string_view name_glob) const {
  return key_pattern("lock*", name_glob);  // lock:{N} and lock-readers:{N}
}
std::optional<std::string> KeyLayout::lock_name(std::string_view key) const {
  return name_in("lock", key);
}
std::optional<std::string> KeyLayout::readers_name(std::string_view key) const {
  return name_in("lock-readers", key);
}
std::string KeyLayout::sem_key_pattern(std::string_view name_glob) const {
  return key_pattern("sem", name_glob);
}
std::optional<std::string> KeyLayout::sem_name(std::string_view key) const {
  return name_in("sem", key);
}
std::string KeyLayout::latch_key_pattern(std::string_view name_glob) const {
  return key_pattern("latch", name_glob);
}
std::optional<std::string> KeyLayout::latch_name(std::string_view key) const {
  return name_in("latch", key);
}
std::string KeyLayout::limiter_key_pattern(std::string_view name_glob) const {
  return key_pattern("limit", name_glob);
}
std::optional<std::string> KeyLayout::limiter_name(std::string_view key) const {
  return name_in("limit", key);
}
std::string KeyLayout::queue_key_pattern(std::string_view name_glob) const {
  return key_pattern("queue", name_glob);
}
std::optional<std::string> KeyLayout::queue_name(std::string_view key) const {
  return name_in("queue", key);
}
std::string KeyLayout::any_key_pattern(std::string_view name_glob) const {
  return key_pattern("*", name_glob);
}

}  // namespace rlock::prim
