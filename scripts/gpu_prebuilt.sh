#!/usr/bin/env bash
# Copies the programs scripts/gpu_run.sh runs, built here with the CUDA backend for the GPU's
# compute capability, into a folder (default .gpubin/, ignored by git) laid out as a build
# directory, so that a short GPU lease spends no device time compiling: carry .gpubin and
# .deps, and run `BUILD_DIR=.gpubin scripts/gpu_run.sh OUT_DIR STEP...` without `build`.
# The GPU machine needs the same CUDA major version as this one (the programs load its
# libcudart and libcufft; gpu_run.sh puts its toolkit's libraries on the library path).
#   scripts/gpu_prebuilt.sh [BUILD_DIR [DEST]]
# BUILD_DIR (default build) must be configured with TORUSGATE_ENABLE_CUDA=ON; its
# CMAKE_CUDA_ARCHITECTURES must name the GPU's (90 for the H100 and H200).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo_root/build}"
dest="${2:-$repo_root/.gpubin}"
cache="$build/CMakeCache.txt"
if [[ ! -f "$cache" ]]; then
  echo "gpu_prebuilt: $build is not a configured build directory (no CMakeCache.txt)" >&2
  exit 2
fi
if ! grep -q "^TORUSGATE_ENABLE_CUDA:BOOL=ON" "$cache" || ! grep -q "^CMAKE_CUDA_COMPILER:" "$cache"; then
  echo "gpu_prebuilt: $build has no CUDA backend (configure with -DTORUSGATE_ENABLE_CUDA=ON" \
    "-DCMAKE_CUDA_COMPILER=...)" >&2
  exit 2
fi
archs="$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$cache")"
[[ -z "$archs" ]] && archs="$(grep -o 'set(CMAKE_CUDA_ARCHITECTURES [0-9 ]*' "$repo_root/CMakeLists.txt" |
  sed 's/set(CMAKE_CUDA_ARCHITECTURES //')"
echo "gpu_prebuilt: CUDA architectures of $build: ${archs:-unknown}"
programs=(tests/gpu/tests_gpu tests/gpu/tests_gpu_host apps/bench_gates apps/bench_circuits
          apps/linear_regression apps/gate_demo apps/circuit_demo apps/cli/torusgate
          apps/compare/compare_backends)
targets=()
for p in "${programs[@]}"; do targets+=("$(basename "$p")"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
rm -rf "$dest"
for p in "${programs[@]}"; do
  mkdir -p "$dest/$(dirname "$p")"
  cp "$build/$p" "$dest/$p"
done
echo "gpu_prebuilt: $(du -sh "$dest" | cut -f1) in $dest; commit $(git -C "$repo_root" rev-parse --short=12 HEAD)"
