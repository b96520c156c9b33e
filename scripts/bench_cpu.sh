#!/usr/bin/env bash
# Runs the CPU gate benchmarks of docs/results/ again on this machine and rewrites their JSON:
# tfhe_lib_128 on the sequential and OpenMP backends (batches 1, 16, 64, 256), the FFTW
# engine for comparison, and tfhe_lib_80 / default_128 (batches 1, 64). About 5 minutes on
# 2 cores. Run it on a quiet machine, after scripts/setup.sh (or with BUILD_DIR set).
# Environment: BUILD_DIR (default build), OUT_DIR (default docs/results; a relative one is
# taken from the folder the script is run in). It takes no arguments.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
takes_no_arguments "$@"
bench="$BUILD_DIR/apps/bench_gates"
out="$(from_caller "${OUT_DIR:-}")"
out="${out:-docs/results}"
if [[ ! -x "$bench" ]]; then
  echo "bench_cpu: $bench not found; run scripts/setup.sh first" >&2
  exit 1
fi
mkdir -p "$out"

run() {  # name, then bench_gates arguments
  local name="$1"
  shift
  echo "== $name"
  "$bench" "$@" --json "$out/$name.json"
}

for backend in sequential openmp; do
  run "bench_gates_cpu_${backend}_tfhe_lib_128" --backend "$backend" --params tfhe_lib_128 \
    --batch 1,16,64,256 --reps 5
done
run bench_gates_cpu_sequential_tfhe_lib_128_fftw --backend sequential --params tfhe_lib_128 \
  --fft fftw --batch 1,64 --reps 5
for params in tfhe_lib_80 default_128; do
  for backend in sequential openmp; do
    run "bench_gates_cpu_${backend}_${params}" --backend "$backend" --params "$params" \
      --batch 1,64 --reps 3
  done
done
