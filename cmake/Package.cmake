# The Debian package: `cpack -G DEB` in a build directory makes rlock_<version>_amd64.deb
# from the same install rules as `cmake --install`, then cmake/package_debian_layout.cmake
# moves what Debian keeps elsewhere (see there). scripts/package-test.sh builds, installs,
# tests and removes it.

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)  # the README links there
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(RLOCK_PACKAGE_MAINTAINER "rlock developers <dev@rlock.invalid>"
    CACHE STRING "Maintainer field of the Debian package")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${RLOCK_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "locks, semaphores and delayed queues through Redis")
# The extended description, under the summary; CPack indents each line into the control
# file, where an empty line would end the field, so paragraphs are not separated.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "rlock lets processes on many machines exclude each other through a Redis
server: a lock has an owner, a lease that frees it if the holder dies, and a
fencing token that never goes backwards. `rlock exec NAME -- CMD` runs a
command only while holding the lock, renews the lease while it runs and stops
the command if the lock is lost, with flock(1)-style exit codes.
Beside locks it offers read-write locks, semaphores, countdown latches, rate
limiters and delayed queues, all on the server's clock, with JSON results.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # rlock_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg-shlibdeps (dpkg-dev) computes Depends from the binary's shared libraries (libc:
# libstdc++, libgcc and hiredis are linked statically). It cannot see libssl.so.3, which
# rlock loads only for rediss:// URLs (src/redis/openssl_api.hpp): named here, and CPack
# adds the computed ones to it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libssl3 (>= 3.0.0)")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS redis-server)
# 0644 for md5sums, as dpkg-deb and lintian expect of control files.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

# Debian-only files, made at configure time and added to the staged tree by the layout
# script: the copyright file policy 12.5 asks for, and the changelog of a native package.
string(TIMESTAMP RLOCK_PACKAGE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)  # honours SOURCE_DATE_EPOCH
set(RLOCK_PACKAGE_DEBIAN_DIR ${CMAKE_BINARY_DIR}/package-debian)
configure_file(${CMAKE_SOURCE_DIR}/cmake/debian/copyright ${RLOCK_PACKAGE_DEBIAN_DIR}/copyright COPYONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/debian/changelog.in ${RLOCK_PACKAGE_DEBIAN_DIR}/changelog @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/debian/lintian-overrides ${RLOCK_PACKAGE_DEBIAN_DIR}/lintian-overrides COPYONLY)
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  file(READ ${CMAKE_SOURCE_DIR}/cmake/debian/lintian-overrides-release RLOCK_RELEASE_OVERRIDES)
  file(APPEND ${RLOCK_PACKAGE_DEBIAN_DIR}/lintian-overrides "\n${RLOCK_RELEASE_OVERRIDES}")
endif()
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/package_debian_layout.cmake)
# Only CPACK_* variables reach the layout script.
set(CPACK_RLOCK_DEBIAN_DIR ${RLOCK_PACKAGE_DEBIAN_DIR})
set(CPACK_RLOCK_STRIP ${CMAKE_STRIP})

include(CPack)
