#!/usr/bin/env bash
# The second call of 2026-12-04 (docs/gpu.md section 6.31), on the GPU machine after
# `tar xzf .deps/gpupack.tar.gz` (BUILD_DIR=.gpubin): the new defaults of each key form at
# small and middle batches, clusters forced for pairs and threes where the automatic shape
# takes 6x1, and the standard key at the batch sizes. Every report a
# bench_gates_gpu_tfhe_lib_128_*.json in OUT, which scripts/gpu_summary.py reads.
#   docs/results/gpu/nvidia-h200_2026-12-04/run_defaults.sh OUT
# Environment: BUILD_DIR (default .gpubin), DEADLINE (seconds since the epoch: a run with
# under 30 s left is skipped), STEP_TIMEOUT (default 120 s a run).
set -u
out="${1:?usage: run_defaults.sh OUT}"
mkdir -p "$out"
bench="${BUILD_DIR:-.gpubin}/apps/bench_gates"
# The libraries scripts/gpu_run.sh unpacks from .deps (any step of it, run first, does) and
# this machine's CUDA toolkit, for programs built on another machine.
multiarch="$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
export LD_LIBRARY_PATH="${DEPS_ROOT:-/opt/deps}/usr/lib/$multiarch:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() {
  local name="$1" left limit="${STEP_TIMEOUT:-120}"
  shift
  if [[ -n "${DEADLINE:-}" ]]; then
    left=$((DEADLINE - $(date +%s) - 20))
    if ((left < 30)); then
      echo "[$(date -u +%T)] $name: skipped, ${left} s left" | tee -a "$out/run_defaults.log"
      return
    fi
    ((left < limit)) && limit=$left
  fi
  echo "[$(date -u +%T)] $name: $bench $*" | tee -a "$out/run_defaults.log"
  local rc=0
  timeout "$limit" "$bench" --backend gpu --params tfhe_lib_128 --gpu-engine fused "$@" \
    --json "$out/bench_gates_gpu_tfhe_lib_128_$name.json" > "$out/$name.log" 2>&1 || rc=$?
  echo "[$(date -u +%T)] $name: exit $rc" | tee -a "$out/run_defaults.log"
}
for u in 4 3 2; do
  run "auto_u$u" --unroll "$u" --batch 1,8,16,22,44,64,132,1024 --reps 5
done
for u in 3 2; do
  run "c6_u$u" --unroll "$u" --fused-cluster 6 --batch 22,44,64,132 --reps 3
done
run auto_standard --batch 1,64,1024,16384,65536 --reps 3
