#!/usr/bin/env bash
# Packs programs prebuilt here (.gpubin, scripts/gpu_prebuilt.sh) and the variant builds
# (.gpuvar, scripts/gpu_variant.sh) into one gzipped tar, .deps/gpupack.tar.gz, beside the
# .deb files of scripts/gpu_deps.sh: the device tool carries at most 64 MiB, and the CUDA
# programs (about 13 MB each for two architectures) take half that compressed. Carry .deps
# alone and unpack it on the GPU machine first:
#   tar xzf .deps/gpupack.tar.gz && BUILD_DIR=.gpubin scripts/gpu_run.sh OUT STEP...
#   scripts/gpu_pack.sh [PROGRAM...]
# PROGRAMs are paths under .gpubin (default: what scripts/gpu_call.sh runs, tests/gpu/tests_gpu
# apps/bench_gates apps/bench_circuits apps/linear_regression apps/compare/compare_backends);
# every variant under .gpuvar goes in whole, but for the bench_gates
# of `now` when it is .gpubin's (the variants step copies that back).
set -euo pipefail

case "${1:-}" in
  -h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
    ;;
esac
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
programs=("$@")
if [[ ${#programs[@]} -eq 0 ]]; then
  programs=(tests/gpu/tests_gpu apps/bench_gates apps/bench_circuits apps/linear_regression
            apps/compare/compare_backends)
fi
paths=()
for p in "${programs[@]}"; do
  if [[ ! -x ".gpubin/$p" ]]; then
    echo "gpu_pack: .gpubin/$p is not there (scripts/gpu_prebuilt.sh builds it)" >&2
    exit 2
  fi
  paths+=(".gpubin/$p")
done
[[ -d .gpuvar ]] && paths+=(.gpuvar)
# The variant `now` is .gpubin's bench_gates (scripts/gpu_prepare.sh): packed once, not twice
# (19 MB), and put back by gpu_run.sh's variants step from BUILD_DIR.
excludes=()
if [[ -f .gpuvar/now/bench_gates ]] && cmp -s .gpuvar/now/bench_gates .gpubin/apps/bench_gates; then
  excludes+=(--exclude=.gpuvar/now/bench_gates)
  [[ " ${programs[*]} " == *" apps/bench_gates "* ]] || paths+=(.gpubin/apps/bench_gates)
fi
mkdir -p .deps
tar czf .deps/gpupack.tar.gz ${excludes[@]+"${excludes[@]}"} "${paths[@]}"
echo "gpu_pack: $(du -h .deps/gpupack.tar.gz | cut -f1) in .deps/gpupack.tar.gz (${paths[*]});" \
  "carry .deps: $(du -sh .deps | cut -f1) with the .deb files"
# The device tool carries at most 64 MiB: past it the call would fail before it starts.
carried=$(du -sb .deps | cut -f1)
if ((carried > 64 * 1024 * 1024)); then
  echo "gpu_pack: .deps holds $((carried / 1048576)) MiB, more than the 64 MiB the device tool" \
    "carries: pack fewer PROGRAMS, or build for the GPU's architecture alone" \
    "(-DCMAKE_CUDA_ARCHITECTURES=90 for an H100 or H200)" >&2
  exit 1
fi
