#!/usr/bin/env bash
# Builds the Debian package (cmake/Package.cmake) in a Release build without tests
# (build-pkg/; or from the build RLOCK_PACKAGE_BUILD_DIR names), checks it with lintian,
# installs it with apt-get, checks what it installed, runs the integration suite against the
# installed /usr/bin/rlock (RLOCK_TEST_BINARY; the suite itself is built in build/, as
# scripts/test.sh builds it) and removes the package, checking that nothing of it is left.
# Arguments go to the integration suite, e.g. scripts/package-test.sh -tc='*exec*' for a
# few cases. Run as root on Debian bookworm.
set -euo pipefail
cd "$(dirname "$0")/.."

# dpkg-dev: dpkg-shlibdeps, for Depends; bash-completion: to load the completion as bash does
# devscripts: hardening-check
scripts/install-deps.sh dpkg-dev lintian man-db bash-completion devscripts
fail() { echo "package-test: $*" >&2; exit 1; }

if dpkg-query -W -f='${Status}' rlock 2>/dev/null | grep -q 'install ok installed' ||
   [ -e /usr/bin/rlock ]; then
  fail "rlock is installed already; remove it first (apt-get remove rlock)"
fi

# RLOCK_PACKAGE_BUILD_DIR=build packages the binary of an existing build (scripts/test.sh:
# its RelWithDebInfo build, -O2 as Debian builds, stripped by the package layout), saving
# CI a third compile of rlock; the default is a Release build of its own.
pkg_build=${RLOCK_PACKAGE_BUILD_DIR:-build-pkg}
if [ "$pkg_build" = build-pkg ]; then
  echo "== building the package (build-pkg/, Release, no tests)"
  cmake -S . -B build-pkg -DCMAKE_BUILD_TYPE=Release -DRLOCK_BUILD_TESTS=OFF -DRLOCK_WERROR=ON >/dev/null
else
  echo "== building the package from $pkg_build/"
  [ -f "$pkg_build/CMakeCache.txt" ] || fail "$pkg_build/ is not a configured build directory"
fi
cmake --build "$pkg_build" -j"$(nproc)" --target rlock
rm -f "$pkg_build"/rlock_*.deb
(cd "$pkg_build" && cpack -G DEB >/dev/null)
version=$(sed -n 's/^project(rlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=$(realpath "$pkg_build")/rlock_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || fail "cpack made no $deb"
ls -l "$deb"
depends=$(dpkg-deb -f "$deb" Depends)
grep -q 'libc6' <<<"$depends" || fail "Depends was not computed (dpkg-shlibdeps): $depends"
# The system's shared hiredis, so that its security updates reach rlock.
grep -q 'libhiredis0.14' <<<"$depends" || fail "Depends does not name libhiredis0.14: $depends"

echo "== lintian (remaining tags are overridden with their reasons: cmake/debian/lintian-overrides)"
lintian_out=$(lintian --fail-on error,warning "$deb" 2>&1) || fail "lintian: $lintian_out"
lintian_out=$(grep -v '^running with root privileges' <<<"$lintian_out" || true)
[ -z "$lintian_out" ] || fail "lintian: $lintian_out"

echo "== apt-get install $deb"
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    echo "== (cleanup) apt-get remove rlock" >&2
    apt-get remove -y -qq rlock >/dev/null || true
  fi
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >/dev/null
installed=1

echo "== hardening-check /usr/bin/rlock (as Debian's hardening=+all builds)"
# Control-flow protection (CET) is checked on rlock's own objects instead: the linker marks
# an executable only when every object in it is marked, and bookworm's glibc start files
# (crt1.o, crti.o) are not.
hardening-check --nocfprotection /usr/bin/rlock || fail "hardening-check /usr/bin/rlock"
objects=$(find "$pkg_build/CMakeFiles/rlock.dir" "$pkg_build/CMakeFiles/rlock_core.dir" -name '*.o')
[ -n "$objects" ] || fail "no object files of rlock under $pkg_build/CMakeFiles"
if [ "$(dpkg --print-architecture)" = amd64 ]; then
  for o in $objects; do
    readelf -n "$o" | grep -q 'x86 feature: IBT, SHSTK' || fail "$o is not built with -fcf-protection"
  done
fi

echo "== the installed files"
[ "$(command -v rlock)" = /usr/bin/rlock ] || fail "rlock is not /usr/bin/rlock on PATH"
/usr/bin/rlock --version | grep -qF "$version" || fail "rlock --version does not say $version"
[ "$(man -w rlock)" = /usr/share/man/man1/rlock.1.gz ] || fail "man -w rlock: $(man -w rlock 2>&1)"
for f in /usr/share/bash-completion/completions/rlock \
         /usr/share/zsh/vendor-completions/_rlock \
         /usr/share/fish/vendor_completions.d/rlock.fish \
         /usr/share/doc/rlock/copyright /usr/share/doc/rlock/README.md \
         /usr/share/doc/rlock/docs/architecture.md \
         /usr/share/doc/rlock/examples/crontab; do
  [ -s "$f" ] || fail "missing $f"
done
# Where each shell finds them, for the shells installed here.
if [ -f /usr/share/bash-completion/bash_completion ]; then
  # The loader returns 124 ("completion loaded, try again"); `complete -p` says what it loaded.
  bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader rlock
           complete -p rlock' | grep -q -- '-F _rlock rlock$' || fail "bash-completion does not load rlock's"
fi
if command -v zsh >/dev/null; then
  zsh -fc '[[ ${fpath[(I)/usr/share/zsh/vendor-completions]} -gt 0 ]]' ||
    fail "zsh's fpath has no /usr/share/zsh/vendor-completions"
fi
if command -v fish >/dev/null; then
  # shellcheck disable=SC2016  # fish expands it
  fish -c 'contains /usr/share/fish/vendor_completions.d $fish_complete_path' ||
    fail "fish's complete path has no /usr/share/fish/vendor_completions.d"
fi

echo "== integration suite against /usr/bin/rlock"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)" --target rlock_integration_tests
RLOCK_TEST_BINARY=/usr/bin/rlock build/tests/rlock_integration_tests "$@"

echo "== apt-get remove rlock"
files=$(dpkg -L rlock)
apt-get remove -y -qq rlock >/dev/null
installed=0
status=$(dpkg-query -W -f='${Status}' rlock 2>/dev/null || true)
case "$status" in "" | *" not-installed") ;; *) fail "rlock's status after remove: $status" ;; esac
while read -r f; do
  [ -d "$f" ] || [ ! -e "$f" ] || fail "left after remove: $f"
done <<<"$files"
[ ! -e /usr/bin/rlock ] || fail "left after remove: /usr/bin/rlock"
[ -z "$(find /usr/bin -name '*rlock*')" ] || fail "left after remove: $(find /usr/bin -name '*rlock*')"
echo "== package test passed"
