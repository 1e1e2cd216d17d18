#include "util/small_file.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "util/error.hpp"

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/rlock-small-file-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::string refusal(const std::string& path, size_t max) {
  try {
    rlock::read_small_file(path, max, "config file");
  } catch (const rlock::Error& e) {
    CHECK(e.exit_code() == rlock::kExitUsage);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("read_small_file reads regular files and refuses everything else at once") {
  TempDir dir;
  std::string file = dir.path + "/f", fifo = dir.path + "/fifo", big = dir.path + "/big";
  std::ofstream(file) << "hello";
  std::ofstream(big) << std::string(1025, 'x');
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);

  CHECK(rlock::read_small_file(file, 1024, "config file").contents == "hello");
  CHECK(refusal(fifo, 1024) == "config file " + fifo + " is a FIFO, not a regular file");
  CHECK(refusal(dir.path, 1024) ==
        "config file " + dir.path + " is a directory, not a regular file");
  CHECK(refusal("/dev/null", 1024) == "config file /dev/null is a device, not a regular file");
  CHECK(refusal(big, 1024) == "config file " + big + " is larger than 1 KiB");
  CHECK(refusal(dir.path + "/missing", 1024) ==
        "config file " + dir.path + "/missing does not exist");
}
