// Loopback ports: a free one, and a listener that never answers.
#pragma once

#include "test_files.hpp"

namespace rlock::test {

// A port on 127.0.0.1 that was free a moment ago (bound to port 0, then closed).
int free_port();
// A TCP socket listening on 127.0.0.1 that never accepts or answers; *port receives its port.
Fd listen_silently(int* port);

}  // namespace rlock::test
