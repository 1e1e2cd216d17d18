#pragma once

#include <string>
#include <vector>

#include "cli/settings.hpp"
#include "inspect/object_type.hpp"
#include "util/duration.hpp"

namespace rlock::cli {

// What `rlock inspect --watch` watches.
struct WatchRequest {
  std::string pattern;
  std::vector<const inspect::ObjectType*> types;
  Millis interval{1000};  // --interval: the longest time between two listings
};

// `rlock inspect --watch`: lists the objects again whenever something changed (see
// inspect::Watch) until q, ^C, INT, TERM, HUP or QUIT (exit 0). With stdout on a terminal,
// a table refreshed in place on the alternate screen (given back as it was on the way
// out); otherwise one JSON array per listing, one per line, until the reader goes away
// (exit 0). A first listing that fails exits as `inspect` does; Redis lost later is tried
// again at every interval meanwhile (the header says "reconnecting…", or one notice on
// stderr).
int run_inspect_watch(const Settings& settings, const WatchRequest& request);

}  // namespace rlock::cli
