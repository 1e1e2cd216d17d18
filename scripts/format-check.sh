#!/usr/bin/env bash
# Checks that every C++ file is formatted as .clang-format says (scripts/test.sh's first
# stage). In a git checkout the files are git's; in a tree without git (a release tarball,
# or no git installed) they are the *.cpp and *.hpp under src, tests and bench, build
# directories and bench output left out.
#   --list         prints the files, one a line, instead
#   --without-git  checks HEAD's tree exported without .git, with no git to call: it
#                  passes and checks the files git has (the README's test command must
#                  work on a release tarball)
set -euo pipefail
cd "$(dirname "$0")/.."

cpp_files() {
  if command -v git >/dev/null 2>&1 &&
    [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    git ls-files -z '*.cpp' '*.hpp'
  else
    find src tests bench \( -type d \( -name 'build*' -o -path bench/out \) -prune \) \
      -o -type f \( -name '*.cpp' -o -name '*.hpp' \) -print0
  fi
}

without_git() {
  # Not local: the EXIT trap runs after the function returned.
  tree=$(mktemp -d)
  stub=$(mktemp -d)
  trap 'rm -rf "$tree" "$stub"' EXIT
  git archive HEAD | tar -x -C "$tree"
  printf '#!/bin/sh\necho "git: command not found" >&2\nexit 127\n' >"$stub/git"
  chmod +x "$stub/git"
  PATH=$stub:$PATH "$tree/scripts/format-check.sh"
  diff <(PATH=$stub:$PATH "$tree/scripts/format-check.sh" --list | sort) \
    <(git ls-tree -r --name-only HEAD | grep -E '\.(cpp|hpp)$' | sort)
}

case "${1:-}" in
  --list) cpp_files | tr '\0' '\n' ;;
  --without-git) without_git ;;
  *) cpp_files | xargs -0 clang-format --dry-run --Werror ;;
esac
