#!/usr/bin/env bash
# torusgate as a subproject of another CMake project (README, "Use it from your own
# project"): tests/install/subproject builds the libraries from this source tree through
# add_subdirectory, without CUDA (about 30 s on 2 cores), and runs the
# consumer program; the subproject makes no install rules. Usage: run_subproject.sh.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
program=""
source "$here/../script_support.sh"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if ! cmake -S "$here/subproject" -B "$tmp/b" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DTORUSGATE_TREE="$here/../.." -DTORUSGATE_ENABLE_CUDA=OFF >"$tmp/configure.log" 2>&1
then
  cat "$tmp/configure.log"
  fail "the project with torusgate as a subproject did not configure"
elif ! cmake --build "$tmp/b" >"$tmp/build.log" 2>&1; then
  tail -40 "$tmp/build.log"
  fail "the project with torusgate as a subproject did not build"
else
  program="$tmp/b/consumer"
  before=$failures
  expect 0 "all correct"
  [[ $failures -eq $before ]] && cat "$tmp/out"
  if grep -q "torusgateTargets" "$tmp/b/torusgate/cmake_install.cmake"; then
    fail "the subproject made install rules (TORUSGATE_INSTALL should default to OFF there)"
  fi
fi
finish subproject
