# Debian bookworm packages: libhiredis-dev (0.14), libcli11-dev, nlohmann-json3-dev, doctest-dev,
# libssl-dev (OpenSSL 3: TLS under rlock's own transport, see src/redis/transport.hpp).
find_package(CLI11 REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)

# hiredis 0.14 is wrapped in an imported target of our own rather than relying on the
# package's config file, which other distributions do not ship for this version.
find_path(HIREDIS_INCLUDE_DIR hiredis/hiredis.h REQUIRED)
# The shared library: Debian's security updates of hiredis (libhiredis0.14) reach rlock, and
# the package depends on it (dpkg-shlibdeps).
find_library(HIREDIS_LIBRARY NAMES hiredis REQUIRED)
add_library(rlock::hiredis UNKNOWN IMPORTED)
set_target_properties(rlock::hiredis PROPERTIES
  IMPORTED_LOCATION "${HIREDIS_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${HIREDIS_INCLUDE_DIR}")

# TLS: OpenSSL 3 from Debian, its headers at build time and libssl.so.3 loaded at run time
# by the first rediss:// connection (not linked: see src/redis/openssl_api.hpp), so that
# security updates of libssl3 reach rlock without a rebuild. SHLIBDEPS cannot see a
# library loaded at run time: the package names libssl3 itself (cmake/Package.cmake).
find_package(OpenSSL 3 REQUIRED)
