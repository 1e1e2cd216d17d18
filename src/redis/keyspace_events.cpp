#include "redis/keyspace_events.hpp"

#include "redis/errors.hpp"

namespace rlock::redis {

std::optional<std::string> keyspace_pattern(std::string_view flags, int db,
                                            std::string_view prefix) {
  bool keyspace = flags.find('K') != std::string_view::npos;
  bool keyevent = flags.find('E') != std::string_view::npos;
  // 'A' is every class but key-miss and new-key, which rlock's writes never depend on.
  bool classes = flags.find_first_of("Ag$lshzxe") != std::string_view::npos;
  if (!classes || (!keyspace && !keyevent)) return std::nullopt;
  std::string pattern = (keyspace ? "__keyspace@" : "__keyevent@") + std::to_string(db) + "__:";
  if (!keyspace) return pattern + "*";
  for (char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
    pattern += c;
  }
  return pattern + "*";
}

std::optional<KeyspaceEvents> KeyspaceEvents::open(Topology& topology, const std::string& prefix,
                                                   std::string* why) {
  std::string flags;
  try {
    Reply reply = topology.command({"CONFIG", "GET", "notify-keyspace-events"}, Retry::kIdempotent);
    if (reply.size() == 2) flags = reply.at(1).str();
  } catch (const ReplyError& e) {
    *why = "CONFIG GET notify-keyspace-events was refused (" + e.reply() + ")";
    return std::nullopt;
  }
  auto pattern = keyspace_pattern(flags, topology.options().endpoint.db, prefix);
  if (!pattern) {
    *why = "the server's notify-keyspace-events ('" + flags + "') sends no keyspace notifications";
    return std::nullopt;
  }
  std::optional<Subscriber> sub;
  try {
    sub = topology.subscribe_pattern(*pattern);
  } catch (const ReplyError& e) {
    *why = "PSUBSCRIBE " + *pattern + " was refused (" + e.reply() + ")";
    return std::nullopt;
  }
  if (!sub) {
    *why = "a cluster's nodes notify of their own keys only";
    return std::nullopt;
  }
  return KeyspaceEvents(std::move(*sub), prefix, flags.find('K') == std::string::npos);
}

KeyspaceEvents::Wake KeyspaceEvents::wait(Deadline until, int interrupt_fd) {
  while (true) {
    Subscriber::Event e = sub_.wait(until, interrupt_fd);
    if (e.wake == Subscriber::Wake::kInterrupted) return Wake::kInterrupted;
    if (e.wake == Subscriber::Wake::kTimeout) return Wake::kTimeout;
    if (e.wake == Subscriber::Wake::kResubscribed) return Wake::kChange;  // one may be missed
    if (!by_event_ || e.payload.starts_with(prefix_)) return Wake::kChange;
    // A flood of other keys' events is read through, but not past `until`.
    if (SteadyClock::now() >= until) return Wake::kTimeout;
  }
}

}  // namespace rlock::redis
