# Debian bookworm packages: libhiredis-dev (0.14), libcli11-dev, nlohmann-json3-dev, doctest-dev,
# libssl-dev (OpenSSL 3: TLS under rlock's own transport, see src/redis/transport.hpp).
find_package(CLI11 REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)

# hiredis 0.14 is wrapped in an imported target of our own rather than relying on the
# package's config file, which other distributions do not ship for this version.
find_path(HIREDIS_INCLUDE_DIR hiredis/hiredis.h REQUIRED)
find_library(HIREDIS_LIBRARY NAMES libhiredis.a hiredis REQUIRED)
add_library(rlock::hiredis UNKNOWN IMPORTED)
set_target_properties(rlock::hiredis PROPERTIES
  IMPORTED_LOCATION "${HIREDIS_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${HIREDIS_INCLUDE_DIR}")

# TLS: OpenSSL from Debian, linked dynamically so that security updates of libssl3 reach
# rlock without a rebuild (the package's Depends come from SHLIBDEPS).
find_package(OpenSSL 3 REQUIRED)
