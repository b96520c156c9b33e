#!/usr/bin/env bash
# A variant build of bench_gates for an A/B run on a GPU: the same sources configured with
# extra CMake arguments (a compile-time choice, such as -DTORUSGATE_FUSED_MAX_REGISTERS=144),
# built here for compute capability 9.0 (H100, H200) into build-variant-NAME and copied to
# .gpuvar/NAME/bench_gates (ignored by git), with ptxas's register report of the fused kernels.
# Carry .gpuvar with .gpubin and .deps, and `scripts/gpu_run.sh OUT variants` runs each variant
# at the same batches on the same machine.
#   scripts/gpu_variant.sh NAME [CMAKE_ARGUMENT...]
# Environment: CUDA_ARCH (default 90), VARIANTS_DIR (default .gpuvar).
set -euo pipefail

if [[ $# -lt 1 || "$1" == -* ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
name="$1"
shift
if [[ ! "$name" =~ ^[A-Za-z0-9_.-]+$ ]]; then
  echo "gpu_variant: the name '$name' must be letters, digits, '.', '_' or '-'" >&2
  exit 2
fi
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo_root/build-variant-$name"
dest="${VARIANTS_DIR:-$repo_root/.gpuvar}/$name"
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
cmake -S "$repo_root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DTORUSGATE_ENABLE_CUDA=ON -DCMAKE_CUDA_FLAGS="-Xptxas -v" "$@" > /dev/null
touch "$repo_root/gpu/src/fused_kernels.cu"  # ptxas's report of this build's kernels
cmake --build "$build" --target bench_gates 2>&1 |
  grep -E "fused_(fixed|blind)_rotation|registers|spill" | paste - - - > "$build/ptxas.txt" || true
mkdir -p "$dest"
cp "$build/apps/bench_gates" "$dest/bench_gates"
sed -E 's/.*(fused_(fixed|blind)_rotation_kernelILj[0-9]E(Lj[0-9]+E)?).*(Used [0-9]+ registers).*/\1 \4/' \
  "$build/ptxas.txt" | grep "rotation_kernel" | sort -u > "$dest/ptxas.txt" || true
echo "gpu_variant: $dest/bench_gates ($*); $(wc -l < "$dest/ptxas.txt") kernels in $dest/ptxas.txt"
