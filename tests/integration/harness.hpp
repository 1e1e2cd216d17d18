// Integration-test harness: real redis-server processes on free loopback ports, child
// processes with captured output, and a Redis client of its own (hiredis, independent of
// rlock's code) so that tests never trust what they test.
#pragma once

#include "assertions.hpp"
#include "ports.hpp"
#include "processes.hpp"
#include "pty_process.hpp"
#include "redis_server.hpp"
#include "test_certificates.hpp"
#include "test_files.hpp"
#include "timing.hpp"
