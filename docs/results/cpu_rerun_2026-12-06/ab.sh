#!/usr/bin/env bash
# The A/B of this folder: bench_gates at two commits on one machine, rounds interleaved.
# OLD and NEW are bench_gates binaries (Release builds of the two commits).
set -euo pipefail
: "${OLD:?path of the old commit's bench_gates}" "${NEW:?path of the new commit's bench_gates}"
out="${OUT_DIR:-.}"
for round in 1 2 3; do
  for side in old new; do
    bench="$OLD"
    [[ $side == new ]] && bench="$NEW"
    for backend in sequential openmp; do
      "$bench" --backend "$backend" --params tfhe_lib_128 --batch 1,64,256 --reps 5 \
        --json "$out/${side}_${backend}_r${round}.json" >/dev/null
    done
  done
done
