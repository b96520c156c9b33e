#!/usr/bin/env bash
# A/B of two builds on one machine: bench_gates of the OLD and the NEW build (Release builds of
# two commits), rounds interleaved (old, new, old, new, ...) so that a host whose speed drifts
# moves both sides alike, then a table of every round's medians (scripts/ab_table.py).
#
#   OLD=old/build/apps/bench_gates NEW=build/apps/bench_gates scripts/ab_bench_gates.sh DIR
#
# Writes DIR/{old,new}_<backend>_r<round>.json and DIR/ab.md. Settings (environment):
#   ROUNDS (3), BATCHES (1,64,256), REPS (5), BACKENDS ("sequential openmp"),
#   PARAMS (tfhe_lib_128), THREADS (2, for openmp), OLD_ARGS and NEW_ARGS (more bench_gates
#   options for one side, e.g. OLD=NEW=build/apps/bench_gates NEW_ARGS="--unroll 2").
set -euo pipefail
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  usage
  [[ $# -eq 1 ]] && exit 0
  exit 2
fi
: "${OLD:?OLD: the old build's bench_gates}" "${NEW:?NEW: the new build's bench_gates}"
for bench in "$OLD" "$NEW"; do
  [[ -x $bench ]] || { echo "ab_bench_gates.sh: $bench is not an executable" >&2; exit 2; }
done
rounds="${ROUNDS:-3}" batches="${BATCHES:-1,64,256}" reps="${REPS:-5}"
backends="${BACKENDS:-sequential openmp}" params="${PARAMS:-tfhe_lib_128}"
threads="${THREADS:-2}"
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "ab_bench_gates.sh: ROUNDS=$rounds is not a count" >&2
  exit 2
fi
out="$1"
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for side in old new; do
    bench="$OLD"
    read -r -a extra <<<"${OLD_ARGS:-}"
    if [[ $side == new ]]; then
      bench="$NEW"
      read -r -a extra <<<"${NEW_ARGS:-}"
    fi
    for backend in $backends; do
      options=("${extra[@]}")
      [[ $backend == openmp ]] && options+=(--threads "$threads")
      echo "round $round/$rounds: $side $backend" >&2
      "$bench" --backend "$backend" "${options[@]}" --params "$params" --batch "$batches" \
        --reps "$reps" --json "$out/${side}_${backend}_r${round}.json" >/dev/null
    done
  done
done
python3 "$(dirname "$0")/ab_table.py" "$out" > "$out/ab.md"
cat "$out/ab.md"
