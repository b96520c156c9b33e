#!/usr/bin/env bash
# scripts/gpu_summary.py on a synthetic report (fixtures/: made-up numbers, not a
# measurement): the tables, the targets met and not met, and its refusals. Skips (77) where
# no python3 exists.
#   run_gpu_summary.sh SCRIPT FIXTURE_DIR WORK_DIR
set -uo pipefail
script="$1" fixtures="$2" work="$3"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
expect() {  # file, text
  grep -qF -- "$2" "$1" || { echo "--- $1"; cat "$1"; fail "missing: $2"; }
}

python3 "$script" "$fixtures" --out "$work/summary.md" || fail "the fixture was refused"
s="$work/summary.md"
expect "$s" "## tfhe_lib_128: \`bench_gates_gpu_tfhe_lib_128.json\`"
expect "$s" "Device SYNTHETIC FIXTURE DEVICE (compute capability 9.0, 132 multiprocessors, FP64 peak 33.5 TFLOP/s, memory 3352 GB/s)"
expect "$s" "Engine cuFFT-batched, key switching gather, device keys 124.0 MB made in 0.50 s:"
expect "$s" "| 16384 | 20,000 | 0.0500 | 85.4% | 12.2% | 3.0% | 9.7% | - | 0 |"
expect "$s" "| 16384 | 80,000 | 0.0125 | 87.9% | 9.8% | 10.9% | 38.9% | 1x4 | 0 |"
expect "$s" "| 1 | 1,250 | 0.8000 | 87.5% | 6.2% | 3.6% | 0.6% | 6x1 | 0 |"
expect "$s" "- cuFFT engine, large batch, at least 15,000 bootstraps/s: 20,000/s (met)"
expect "$s" "- transfers at most 5% of a 16,384-gate run (cuFFT engine): 3.0% (met)"
expect "$s" "- fused engine, large batch, at least 100,000 bootstraps/s: 80,000/s (NOT met)"
expect "$s" "- fused engine, batch 1, at most 1 ms: 0.800 ms (met)"

# Refusals: no reports, a report that is not JSON, a CPU report.
mkdir -p "$work/empty" "$work/bad" "$work/cpu"
out="$(python3 "$script" "$work/empty" 2>&1)" && fail "an empty folder was accepted"
[[ "$out" == *"no bench_gates_gpu_*.json in"* ]] || fail "empty folder: $out"
echo '{"runs": [' > "$work/bad/bench_gates_gpu_x.json"
out="$(python3 "$script" "$work/bad" 2>&1)" && fail "broken JSON was accepted"
[[ "$out" == *"is not valid JSON"* ]] || fail "broken JSON: $out"
echo '{"results": []}' > "$work/cpu/bench_gates_gpu_x.json"
out="$(python3 "$script" "$work/cpu" 2>&1)" && fail "a CPU report was accepted"
[[ "$out" == *"is not a GPU report of bench_gates"* ]] || fail "CPU report: $out"
out="$(python3 "$script" "$work/none" 2>&1)" && fail "a missing folder was accepted"
[[ "$out" == *"is not a directory"* ]] || fail "missing folder: $out"
echo "gpu_summary: ok"
