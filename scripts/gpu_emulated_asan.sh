#!/usr/bin/env bash
# The GPU tests on the CUDA emulator under AddressSanitizer and UBSan (docs/gpu.md 2.1): the
# stand-in for compute-sanitizer's memcheck on a machine without a GPU. Builds
# tests_gpu_emulated alone into $BUILD_DIR (default build-asan/) and runs the small-batch
# case of every engine and key switching plus the cheap cases (about 6 minutes on 2 cores);
# pass Catch2 test specs to run others. Exits nonzero on a failure or a sanitizer report.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${BUILD_DIR:-build-asan}"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTORUSGATE_ENABLE_CUDA=OFF \
  -DTORUSGATE_BUILD_APPS=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
cmake --build "$build_dir" --target tests_gpu_emulated
specs="${*:-[sanitize],outputs may alias*,CUDA graphs*,circuits run*,several GPU*,phase timings*,bad inputs*,fused engine: circuits*,fused engine: chunked*,pinned staged*}"
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_stack_use_after_return=0}" \
  "$build_dir/tests/gpu/tests_gpu_emulated" "$specs"
