#include "redis/openssl_api.hpp"

#include <dlfcn.h>

#include <string>

#include "util/error.hpp"

namespace rlock::redis {
namespace {

// The soname pins the ABI: OpenSSL 3's, the one the headers describe. libcrypto comes in
// as libssl's dependency, and dlsym on libssl's handle searches it too.
constexpr const char* kLibssl = "libssl.so.3";

[[noreturn]] void unavailable(const std::string& why) {
  throw UnavailableError("TLS (rediss://) needs OpenSSL 3 (" + why +
                         "): install the libssl3 package");
}

OpenSsl load() {
  void* lib = ::dlopen(kLibssl, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    unavailable(why ? why : std::string("cannot load ") + kLibssl);
  }
  OpenSsl api{};
#define RLOCK_OPENSSL_LOAD(name)                                        \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(lib, #name)); \
  if (!api.name) unavailable(std::string(kLibssl) + " has no " #name);
  RLOCK_OPENSSL_FUNCTIONS(RLOCK_OPENSSL_LOAD)
#undef RLOCK_OPENSSL_LOAD
  return api;
}

}  // namespace

const OpenSsl& openssl() {
  static const OpenSsl api = load();
  return api;
}

}  // namespace rlock::redis
