#!/usr/bin/env bash
# Oversubscription on a 2-core host: bench_gates (tfhe_lib_128, batches 1 and 4, medians of
# 15) alone on OpenMP with 2 threads, then two such processes at once, then two sequential
# processes at once. BENCH is bench_gates (default build/apps/bench_gates); reports go here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bench="${BENCH:-build/apps/bench_gates}"
args=(--params tfhe_lib_128 --batch 1,4 --reps 15)
"$bench" --backend openmp --threads 2 "${args[@]}" --json "$here/openmp_alone.json" >/dev/null
"$bench" --backend openmp --threads 2 "${args[@]}" --json "$here/openmp_pair_a.json" >/dev/null &
"$bench" --backend openmp --threads 2 "${args[@]}" --json "$here/openmp_pair_b.json" >/dev/null
wait
"$bench" --backend sequential "${args[@]}" --json "$here/sequential_pair_a.json" >/dev/null &
"$bench" --backend sequential "${args[@]}" --json "$here/sequential_pair_b.json" >/dev/null
wait
