#!/usr/bin/env bash
# The library as another project uses it: `cmake --install` of this build into a temporary
# prefix, then tests/install/consumer (a project outside the tree) configured with only that
# prefix on CMAKE_PREFIX_PATH, built and run, and an installed program started from the
# prefix. Usage: run_install.sh BUILD_DIR (ctest passes the build folder).
set -uo pipefail
build="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
program=""
source "$here/../script_support.sh"
source "$here/consumer_support.sh"

prefix="$tmp/prefix"
if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  fail "cmake --install $build failed"
  finish install
fi
# The library folder is GNUInstallDirs' choice for the system (lib, lib64, ...).
libdir="$(dirname "$(find "$prefix" -name libtorusgate_core.a | head -1)")"
[[ -f "$libdir/libtorusgate_core.a" ]] || fail "the install lacks libtorusgate_core.a"
for f in "${libdir#"$prefix/"}"/cmake/torusgate/torusgateConfig.cmake \
  "${libdir#"$prefix/"}"/cmake/torusgate/torusgateConfigVersion.cmake \
  "${libdir#"$prefix/"}"/pkgconfig/torusgate.pc include/torusgate/circuits/circuits.hpp \
  include/torusgate/core/keys.hpp bin/torusgate share/doc/torusgate/README.md \
  share/doc/torusgate/docs/gpu.md share/doc/torusgate/docs/api.md; do
  [[ -e "$prefix/$f" ]] || fail "the install lacks $f"
done
# docs/api.md lists every installed header.
while IFS= read -r header; do
  grep -qF "\`torusgate/$header\`" "$here/../../docs/api.md" ||
    fail "docs/api.md does not list the installed header torusgate/$header"
done < <(cd "$prefix/include/torusgate" && find . -name '*.hpp' | sed 's|^\./||' | sort)
[[ -e "$prefix/share/doc/torusgate/docs/results" ]] &&
  fail "the measured results were installed with the documentation"
[[ -e "$prefix/include/torusgate/core/vec8.hpp" ]] &&
  fail "the library's own vector header (vec8.hpp) was installed"

# The consumer: the same compilers as this build, nothing of the source tree on its paths.
compiler="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")"
build_consumer "the consumer project (against the installed package)" "$here/consumer" \
  "$tmp/consumer" -DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
# OpenMP is the library's own: its runtime is linked, but the consumer's sources are not
# compiled with -fopenmp (nor with torusgate.pc's Cflags, below).
if grep -qF -- "-fopenmp" "$tmp/consumer/compile_commands.json" 2>/dev/null; then
  fail "the consumer's sources were compiled with -fopenmp"
fi

# Without CMake: the compiler given what pkg-config says of the installed torusgate.pc.
if ! command -v pkg-config >/dev/null; then
  echo "skipped the pkg-config build: no pkg-config"
elif ! flags="$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs torusgate 2>&1)"
then
  fail "pkg-config does not take the installed torusgate.pc: $flags"
elif [[ "$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags torusgate)" == *-fopenmp* ]]
then
  fail "torusgate.pc's Cflags have -fopenmp (it belongs in Libs only)"
# $flags unquoted: pkg-config's words are the compiler's arguments.
elif ! "$compiler" -std=c++20 "$here/consumer/main.cpp" -o "$tmp/pc_consumer" $flags \
  >"$tmp/pc_build.log" 2>&1; then
  cat "$tmp/pc_build.log"
  fail "the consumer did not build with the flags of torusgate.pc: $flags"
else
  program="$tmp/pc_consumer"
  expect 0 "all correct"
fi

# expect_not_found WHAT TEXT COMMAND...: COMMAND (a configure against the package) must fail,
# and its log, with CMake's line breaks joined, must hold TEXT.
expect_not_found() {
  local what="$1" text="$2" log="$tmp/not_found.log"
  shift 2
  if "$@" >"$log" 2>&1; then
    fail "$what: the package was found"
  elif ! tr -s ' \n' '  ' <"$log" | grep -qF -- "$text"; then
    cat "$log"
    fail "$what: the refusal does not say '$text'"
  fi
}
# find_project NAME ARGS: a project whose only content is find_package(torusgate ARGS).
find_project() {
  mkdir -p "$tmp/$1"
  printf 'cmake_minimum_required(VERSION 3.24)\nproject(%s LANGUAGES CXX)\n%s\n' "$1" \
    "find_package(torusgate $2)" >"$tmp/$1/CMakeLists.txt"
  echo "$tmp/$1"
}

# A version the package does not match; an unknown component, refused with the list.
expect_not_found "find_package(torusgate 2.0)" 'compatible with requested version "2.0"' \
  cmake -S "$(find_project v2 "2.0 CONFIG REQUIRED")" -B "$tmp/v2/build" \
  -DCMAKE_PREFIX_PATH="$prefix"
expect_not_found "find_package(torusgate COMPONENTS cpu gpu nosuch)" \
  "no component 'nosuch' (torusgate has core, cpu, gpu, circuits, fpga_fft, backends)" \
  cmake -S "$(find_project components "0.1 CONFIG REQUIRED COMPONENTS cpu gpu nosuch")" \
  -B "$tmp/components/build" -DCMAKE_PREFIX_PATH="$prefix"

# Without a library the package needs (here pkg-config sees no module at all), the package is
# not found, with a message naming the module and its Debian package.
expect_not_found "without FFTW3 and libsodium" \
  "pkg-config module 'fftw3' (Debian package libfftw3-dev), which pkg-config does not find" \
  env PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= cmake -S "$here/consumer" \
  -B "$tmp/nodeps" -DCMAKE_PREFIX_PATH="$prefix"

# A build with the CUDA backend on a machine without the toolkit (hidden here in a private
# mount namespace, where this user may make one): not found, saying what to do.
nvcc="$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")"
cuda_dir="${nvcc:+$(readlink -f "$(dirname "$nvcc")/..")}"
if ! grep -q "^set(torusgate_HAVE_CUDA ON)" "$libdir/cmake/torusgate/torusgateConfig.cmake"; then
  echo "skipped the missing-toolkit refusal: this build has no CUDA backend"
elif [[ -z "$cuda_dir" || ! -d "$cuda_dir" ]]; then
  echo "skipped the missing-toolkit refusal: the CUDA toolkit's folder is not known"
elif ! unshare -m bash -c 'mount -t tmpfs none "$1"' _ "$cuda_dir" 2>/dev/null; then
  echo "skipped the missing-toolkit refusal: cannot hide the toolkit in a mount namespace here"
else
  expect_not_found "without the CUDA toolkit" \
    "built with the CUDA backend and needs the CUDA toolkit's cudart and cuFFT" \
    unshare -m bash -c 'mount -t tmpfs none "$1" && shift && "$@"' _ "$cuda_dir" \
    cmake -S "$here/consumer" -B "$tmp/nocuda" -DCMAKE_PREFIX_PATH="$prefix"
fi

# An installed program starts from the prefix (its run path finds what it links).
program="$prefix/bin/torusgate"
expect 0 "torusgate 0." --version
finish install
