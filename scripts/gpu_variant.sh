#!/usr/bin/env bash
# A variant build of bench_gates for an A/B run on a GPU: the same sources configured with
# extra CMake arguments (a compile-time choice, such as -DTORUSGATE_FUSED_MAX_REGISTERS=144;
# a -DCMAKE_CUDA_FLAGS=... adds to the -Xptxas -v of the register report, not replaces it),
# or with --at REV the sources of another commit (a git worktree in build-variant-NAME-src:
# the baseline of a change), built here for compute capability 9.0 (H100, H200) into
# build-variant-NAME and copied to .gpuvar/NAME/bench_gates (ignored by git), with ptxas's
# register report of the fused kernels (ptxas.txt) and what was built (variant.txt).
# Carry .gpuvar with .gpubin and .deps, and `scripts/gpu_run.sh OUT variants` runs each variant
# at the same batches on the same machine.
#   scripts/gpu_variant.sh NAME [--at REV] [CMAKE_ARGUMENT...]
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
src="$repo_root"
built="the working tree"
if [[ "${1:-}" == --at ]]; then
  if [[ $# -lt 2 || -z "$2" || "$2" == -* ]]; then
    echo "gpu_variant: --at needs a revision (a commit, tag or branch)" >&2
    exit 2
  fi
  if ! commit="$(git -C "$repo_root" rev-parse --verify --quiet "$2^{commit}")"; then
    echo "gpu_variant: --at $2: not a commit of this repository" >&2
    exit 2
  fi
  shift 2
  src="$build-src"
  if [[ -e "$src/.git" ]]; then
    git -C "$src" checkout --quiet --detach "$commit"
  else
    git -C "$repo_root" worktree add --quiet --detach "$src" "$commit"
  fi
  built="commit $commit"
fi
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
# ptxas's report below needs -Xptxas -v: kept in front of the caller's CMAKE_CUDA_FLAGS (for
# a compile-time macro of the sources, say -DCMAKE_CUDA_FLAGS=-DTORUSGATE_FUSED_TWIST_TABLE).
cuda_flags="-Xptxas -v"
args=()
for a in "$@"; do
  if [[ "$a" == -DCMAKE_CUDA_FLAGS=* ]]; then
    cuda_flags="$cuda_flags ${a#-DCMAKE_CUDA_FLAGS=}"
  else
    args+=("$a")
  fi
done
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DTORUSGATE_ENABLE_CUDA=ON -DCMAKE_CUDA_FLAGS="$cuda_flags" ${args[@]+"${args[@]}"} > /dev/null
rm -f "$build/gpu/CMakeFiles/torusgate_gpu.dir/src/fused_kernels.cu.o"  # ptxas reports it again
cmake --build "$build" --target bench_gates > "$build/build.log" 2>&1 || {
  tail -n 30 "$build/build.log" >&2
  echo "gpu_variant: the build failed ($build/build.log)" >&2
  exit 1
}
mkdir -p "$dest"
cp "$build/apps/bench_gates" "$dest/bench_gates"
echo "$built; CMake arguments: ${*:-none}" > "$dest/variant.txt"
# Per rotation kernel (its mangled name shortened) and architecture: registers and spills.
awk '/Compiling entry function/ {
       name = $0; sub(/.*fused_/, "fused_", name); sub(/EEvPj.*/, "E", name); arch = $NF; next }
     /spill stores/ { spills = $0; sub(/^ */, "", spills); next }
     /Used [0-9]+ registers/ && name ~ /rotation_kernel/ {
       match($0, /Used [0-9]+ registers/)
       print name, arch, substr($0, RSTART, RLENGTH) ";", spills }' "$build/build.log" |
  sort -u > "$dest/ptxas.txt"
echo "gpu_variant: $dest/bench_gates ($built; ${*:-no CMake arguments}); registers of $(wc -l < "$dest/ptxas.txt") kernels" \
  "in $dest/ptxas.txt"
