#!/usr/bin/env bash
# Installs the Debian packages rlock needs to build and test, if any is missing.
# Usage: scripts/install-deps.sh [extra packages...]
set -euo pipefail

packages=(cmake g++ make libhiredis-dev libssl-dev libcli11-dev nlohmann-json3-dev doctest-dev
          redis-server redis-tools openssl "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node.js and npm run the Redisson peer of the tests. Asked by command, not by package: a
# Node.js from NodeSource (package nodejs) bundles npm and conflicts with Debian's npm
# package, which apt would then refuse to install.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "rlock: missing packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 69
fi
echo "rlock: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
