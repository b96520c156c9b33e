#!/usr/bin/env bash
# torusgate as a subproject of another CMake project (README, "Use it from your own
# project"): tests/install/subproject builds the libraries from this source tree through
# add_subdirectory, without CUDA (about 30 s on 2 cores), and runs the consumer program and
# the program of its shared library; the subproject makes no install rules, and its
# BUILD_SHARED_LIBS leaves torusgate's libraries static. Usage: run_subproject.sh.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
program=""
source "$here/../script_support.sh"
source "$here/consumer_support.sh"

build_consumer "the project with torusgate as a subproject" "$here/subproject" "$tmp/b" \
  -DTORUSGATE_TREE="$here/../.." -DTORUSGATE_ENABLE_CUDA=OFF
[[ -x "$tmp/b/plugin_host" ]] ||
  fail "the shared library of a project with CMAKE_POSITION_INDEPENDENT_CODE was not built"
[[ -f "$tmp/b/torusgate/core/libtorusgate_core.a" ]] ||
  fail "torusgate's libraries were not static in a project that builds shared libraries"
if [[ -f "$tmp/b/torusgate/cmake_install.cmake" ]] &&
  grep -q "torusgateTargets" "$tmp/b/torusgate/cmake_install.cmake"; then
  fail "the subproject made install rules (TORUSGATE_INSTALL should default to OFF there)"
fi
finish subproject
