#include "inspect/lock_describe.hpp"

#include <vector>

#include "inspect/types.hpp"
#include "redis/errors.hpp"
#include "util/error.hpp"

namespace rlock::inspect {
namespace {

BatchClock clock_of(const redis::Reply& time) {
  BatchClock c;
  if (time.is_array() && time.size() == 2) {
    try {
      c.now_us = time.at(0).integer() * 1000000 + time.at(1).integer();
    } catch (const DataError&) {
    }
  }
  return c;
}

// The lock on the one server `node` sends to: TIME and inspect's reads, one round trip.
std::optional<Json> read_one(redis::Topology& node, const prim::KeyLayout& layout,
                             const std::string& name) {
  const ObjectType& type = lock_type();
  const Found found{name, layout.lock_key(name)};
  std::vector<std::vector<std::string>> cmds = {{"TIME"}};
  for (auto& r : type.reads(layout, found)) cmds.push_back(std::move(r));
  auto replies = node.pipeline(cmds, redis::Retry::kIdempotent, found.key);
  if (replies.at(0).is_error()) throw redis::ReplyError(replies.at(0).str());
  auto decoded = type.decode(found, &replies[1], clock_of(replies[0]));
  if (!decoded) return std::nullopt;
  return std::move(decoded->json);
}

// What quorum members must agree on: the holders without what each member's clock says.
Json agreed_part(const Json& object) {
  Json out = Json::array();
  for (const auto& h : object["holders"]) {
    Json one = h;
    one.erase("lease_ms");
    one.erase("acquired_at");
    out.push_back(std::move(one));
  }
  return out;
}

std::optional<Json> read_quorum(redis::Topology& topology, const prim::KeyLayout& layout,
                                const std::string& name) {
  const size_t members = topology.quorum_members().size();
  const std::vector<std::string> silent = topology.silent_quorum_members();
  std::vector<std::optional<Json>> seen;
  size_t member = 0, answered = 0;
  topology.for_each_master([&](redis::Topology& node) {
    if (silent[member++].empty()) {
      try {
        auto object = read_one(node, layout, name);
        if (object) (*object)["member"] = node.server_name();
        seen.push_back(std::move(object));
        ++answered;
      } catch (const UnavailableError&) {
      }
    }
  });
  if (answered <= members / 2)
    throw UnavailableError("fewer than a majority of the " + std::to_string(members) +
                           " quorum members answered");
  for (const auto& object : seen) {
    if (!object) continue;
    size_t agree = 0;
    for (const auto& other : seen) agree += other && agreed_part(*other) == agreed_part(*object);
    if (agree > members / 2) return object;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Json> describe_lock(redis::Topology& topology, const prim::KeyLayout& layout,
                                  const std::string& name) {
  if (!topology.quorum_members().empty()) return read_quorum(topology, layout, name);
  return read_one(topology, layout, name);
}

}  // namespace rlock::inspect
