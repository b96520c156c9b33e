#!/usr/bin/env bash
# scripts/ab_bench_gates.sh end to end on the toy parameter set (a few seconds): both sides'
# reports and the table of ab_table.py (one row per backend and batch, the rounds in order,
# the ratio; key forms and engines named when the sides differ in them), and the refusals of both
# scripts: no folder, a missing build, a bad ROUNDS, a folder without reports, a report that is
# not bench_gates JSON, a batch measured on one side only.
#   run_ab_bench_gates.sh SCRIPT BENCH_GATES
set -uo pipefail
script="$1" bench="$2"
table="$(dirname "$script")/ab_table.py"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

program="$script"
export OLD="$bench" NEW="$bench"
expect 0 "Writes DIR/{old,new}_<backend>_r<round>.json" --help
expect 2 "Writes DIR/{old,new}_<backend>_r<round>.json"
OLD="$tmp/none" expect 2 "ab_bench_gates.sh: $tmp/none is not an executable" "$tmp/x"
ROUNDS=0 expect 2 "ab_bench_gates.sh: ROUNDS=0 is not a count" "$tmp/x"
ROUNDS=2 BATCHES=1,3 REPS=1 BACKENDS="sequential openmp" PARAMS=toy_INSECURE \
  expect 0 "| sequential | 3 |" "$tmp/ab"
for side in old new; do
  for backend in sequential openmp; do
    for round in 1 2; do
      report="${side}_${backend}_r$round.json"
      [[ -s $tmp/ab/$report ]] || fail "no $report"
    done
  done
done
header="^| backend | batch | old \`[0-9a-f]\{7\}\` | new \`[0-9a-f]\{7\}\` | new/old |$"
grep -q "$header" "$tmp/ab/ab.md" || fail "ab.md lacks its header with both commits"
row='^\| (sequential|openmp) \| [13] \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \| [0-9.]+ \|$'
rows="$(grep -cE "$row" "$tmp/ab/ab.md")"
[[ $rows -eq 4 ]] || { fail "ab.md has $rows rows of two rounds, expected 4"; cat "$tmp/ab/ab.md"; }
# One binary, two key forms and engines (OLD_ARGS, NEW_ARGS): the header names each side's.
ROUNDS=1 BATCHES=1 REPS=1 BACKENDS=sequential PARAMS=toy_INSECURE OLD_ARGS="--fft fftw" \
  NEW_ARGS="--unroll 2 --fft portable" expect 0 "| new \`" "$tmp/forms"
forms="old \`[0-9a-f]\{7\}\`, unroll 1, fft fftw | new \`[0-9a-f]\{7\}\`, unroll 2, fft portable |"
grep -q "$forms" "$tmp/forms/ab.md" ||
  { fail "ab.md does not name the key forms and engines"; cat "$tmp/forms/ab.md"; }

program="$table"
expect 0 "usage: ab_table.py DIR" --help
expect 2 "usage: ab_table.py DIR"
expect 2 "ab_table.py: $tmp/none is not a folder" "$tmp/none"
mkdir -p "$tmp/empty" "$tmp/bad" "$tmp/half"
expect 2 "ab_table.py: $tmp/empty: no old_*_r*.json or new_*_r*.json reports" "$tmp/empty"
echo '{"commit": "x"}' > "$tmp/bad/old_sequential_r1.json"
expect 2 "ab_table.py: $tmp/bad/old_sequential_r1.json: not a bench_gates report" "$tmp/bad"
cp "$tmp/ab/old_sequential_r1.json" "$tmp/half/"
expect 2 "ab_table.py: sequential batch 1 was measured on one side only" "$tmp/half"
finish "ab_bench_gates.sh and ab_table.py"
