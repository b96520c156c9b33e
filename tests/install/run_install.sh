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
  "$tmp/consumer" -DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_PREFIX_PATH="$prefix"

# Without CMake: the compiler given what pkg-config says of the installed torusgate.pc.
if ! command -v pkg-config >/dev/null; then
  echo "skipped the pkg-config build: no pkg-config"
elif ! flags="$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs torusgate 2>&1)"
then
  fail "pkg-config does not take the installed torusgate.pc: $flags"
# $flags unquoted: pkg-config's words are the compiler's arguments.
elif ! "$compiler" -std=c++20 "$here/consumer/main.cpp" -o "$tmp/pc_consumer" $flags \
  >"$tmp/pc_build.log" 2>&1; then
  cat "$tmp/pc_build.log"
  fail "the consumer did not build with the flags of torusgate.pc: $flags"
else
  program="$tmp/pc_consumer"
  expect 0 "all correct"
fi

# A version the package does not match is refused by find_package.
mkdir -p "$tmp/v2"
cat >"$tmp/v2/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.24)
project(v2 LANGUAGES CXX)
find_package(torusgate 2.0 CONFIG REQUIRED)
CMAKE
if cmake -S "$tmp/v2" -B "$tmp/v2/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/v2.log" 2>&1; then
  fail "find_package(torusgate 2.0) accepted the installed version"
elif ! tr -s ' \n' '  ' <"$tmp/v2.log" | grep -q 'compatible with requested version "2.0"'; then
  cat "$tmp/v2.log"
  fail "find_package(torusgate 2.0) failed for another reason than the version"
fi

# Components are the targets; an unknown one is refused with the list.
mkdir -p "$tmp/components"
cat >"$tmp/components/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.24)
project(components LANGUAGES CXX)
find_package(torusgate 0.1 CONFIG REQUIRED COMPONENTS cpu gpu nosuch)
CMAKE
if cmake -S "$tmp/components" -B "$tmp/components/build" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/components.log" 2>&1; then
  fail "find_package(torusgate COMPONENTS cpu gpu nosuch) accepted the unknown component"
elif ! tr -s ' \n' '  ' <"$tmp/components.log" | grep -q \
  "no component 'nosuch' (torusgate has core, cpu, gpu, circuits, fpga_fft, backends)"; then
  cat "$tmp/components.log"
  fail "an unknown component was not named with the list"
fi

# Without a library the package needs (here pkg-config sees no module at all), the package is
# not found, with a message naming the module and its Debian package.
if PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= cmake -S "$here/consumer" -B "$tmp/nodeps" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/nodeps.log" 2>&1; then
  fail "the package was found although pkg-config finds neither FFTW3 nor libsodium"
elif ! tr -s ' \n' '  ' <"$tmp/nodeps.log" | grep -q \
  "pkg-config module 'fftw3' (Debian package libfftw3-dev), which pkg-config does not find"; then
  cat "$tmp/nodeps.log"
  fail "a missing FFTW3 was not named"
fi

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
  unshare -m bash -c 'mount -t tmpfs none "$1" && shift && "$@"' _ "$cuda_dir" \
    cmake -S "$here/consumer" -B "$tmp/nocuda" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$tmp/nocuda.log" 2>&1
  if ! tr -s ' \n' '  ' <"$tmp/nocuda.log" | grep -q "built with the CUDA backend and needs \
the CUDA toolkit's cudart and cuFFT"; then
    cat "$tmp/nocuda.log"
    fail "a missing CUDA toolkit was not explained"
  fi
fi

# An installed program starts from the prefix (its run path finds what it links).
program="$prefix/bin/torusgate"
expect 0 "torusgate 0." --version
finish install
