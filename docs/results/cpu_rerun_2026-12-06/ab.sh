#!/usr/bin/env bash
# The A/B of this folder: bench_gates at two commits on one machine, rounds interleaved.
# OLD and NEW are bench_gates binaries (Release builds of the two commits). Now a call of the
# general script (the same runs: 3 rounds, batches 1, 64 and 256, 5 repetitions, sequential
# and OpenMP with 2 threads, this host's OpenMP default then).
set -euo pipefail
: "${OLD:?path of the old commit's bench_gates}" "${NEW:?path of the new commit's bench_gates}"
here="$(cd "$(dirname "$0")" && pwd)"
ROUNDS=3 BATCHES=1,64,256 REPS=5 "$here/../../../scripts/ab_bench_gates.sh" "${OUT_DIR:-.}"
