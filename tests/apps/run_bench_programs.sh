#!/usr/bin/env bash
# End-to-end checks of bench_gates, bench_circuits, circuit_demo, circuit_costs, gate_demo and
# scripts/bench_circuits.sh as a user runs them (toy parameters, seconds): the JSON report
# written whole, an earlier report kept when a run is refused, a run too large for this
# machine's memory refused before any key is made, the help listing every GPU option,
# circuit_demo's width range, refused names and options.
#   run_bench_programs.sh BENCH_GATES BENCH_CIRCUITS CIRCUIT_DEMO CIRCUIT_COSTS GATE_DEMO
set -uo pipefail
bench_gates="$1"
bench_circuits="$2"
circuit_demo="$3"
circuit_costs="$4"
gate_demo="$5"
scripts_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)"
bench_circuits_script="$scripts_dir/bench_circuits.sh"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

program="$bench_gates"
expect 0 "JSON written to $tmp/g.json" --backend sequential --params toy_INSECURE --batch 2 \
  --reps 1 --warmup 0 --json "$tmp/g.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['results'][0]['batch']==2" \
  "$tmp/g.json" || fail "bench_gates: the JSON report does not parse or has the wrong content"
ls "$tmp" | grep -q '\.tmp$' && fail "bench_gates left a temporary file beside its report"
echo '{"earlier": "report"}' >"$tmp/keep.json"
# 2^24 gates of tfhe_lib_128 hold about 315 GiB: refused on any machine with less free.
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [[ -n "$available_kib" && "$available_kib" -lt 300000000 ]]; then
  expect 2 "--batch 16777216 would hold about" --backend sequential --batch 1,16777216 \
    --json "$tmp/keep.json"
fi
expect 2 "--json: cannot write to '$tmp': it is a folder" --backend sequential \
  --params toy_INSECURE --batch 1 --json "$tmp"
expect 2 "--json: cannot write to '$tmp/none/g.json': the folder '$tmp/none' does not exist" \
  --backend sequential --params toy_INSECURE --batch 1 --json "$tmp/none/g.json"
expect 2 "--json: the path is empty" --backend sequential --params toy_INSECURE --batch 1 --json ""
expect 2 "--json: cannot write to '$tmp/keep.json/g.json': '$tmp/keep.json' is not a folder" \
  --backend sequential --params toy_INSECURE --batch 1 --json "$tmp/keep.json/g.json"
grep -q earlier "$tmp/keep.json" || fail "a refused bench_gates run changed the earlier report"
# A run stopped before its end leaves the earlier report as it was (no empty file).
timeout -s INT 2 "$bench_gates" --backend sequential --params toy_INSECURE --batch 4096 \
  --reps 100000 --json "$tmp/keep.json" >/dev/null 2>&1
grep -q earlier "$tmp/keep.json" || fail "an interrupted bench_gates run emptied the earlier report"
expect 0 "--fused-bundle-overlap O" --help
expect 0 "--fused-cluster-points Q" --help

program="$bench_circuits"
if [[ -n "$available_kib" && "$available_kib" -lt 300000000 ]]; then
  expect 2 "mul.wrapping.dadda on 1048576 elements of 16 bits would hold about" \
    --backend sequential --params tfhe_lib_128 --ops mul.wrapping.dadda --widths 16 \
    --lanes 1048576 --json "$tmp/keep.json"
fi
grep -q earlier "$tmp/keep.json" || fail "a refused bench_circuits run changed the earlier report"
expect 2 "--json: the path is empty" --backend sequential --params toy_INSECURE \
  --ops add.sklansky --widths 4 --json ""
expect 0 "JSON written to $tmp/c.json" --backend sequential --params toy_INSECURE \
  --ops add.sklansky --widths 4 --lanes 2 --reps 1 --warmup 0 --json "$tmp/c.json"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/c.json" \
  || fail "bench_circuits: the JSON report does not parse"
# The reports' paths as printed: a terminal's escape sequence in them stays inert (\x1B).
esc=$'\e[31m'
mkdir -p "$tmp/d$esc"
expect 0 "JSON written to $tmp/d\x1B[31m/c.json" --backend plaintext --ops add.sklansky \
  --widths 4 --reps 1 --warmup 0 --json "$tmp/d$esc/c.json"
grep -qF "$esc" "$tmp/out" && fail "bench_circuits: the report's path reached the terminal raw"
program="$bench_gates"
expect 0 "JSON written to $tmp/d\x1B[31m/g.json" --backend sequential --params toy_INSECURE \
  --batch 2 --reps 1 --warmup 0 --json "$tmp/d$esc/g.json"
grep -qF "$esc" "$tmp/out" && fail "bench_gates: the report's path reached the terminal raw"
program="$bench_circuits"
# A key in threes: the header names it; each row and result carries the noise model's chance
# of a wrong bit per run, which the threes' key raises (toy_INSECURE's margins stay huge).
expect 0 "key bits in threes (--unroll 3)" --backend sequential --params toy_INSECURE \
  --unroll 3 --ops add.sklansky --widths 4 --reps 1 --warmup 0 --json "$tmp/c3.json"
python3 - "$tmp/c.json" "$tmp/c3.json" <<'PY' || fail "bench_circuits: failure bounds in the JSON"
import json, sys
standard, threes = (json.load(open(path)) for path in sys.argv[1:])
assert standard["bootstrapping_key_unroll"] == 1 and threes["bootstrapping_key_unroll"] == 3
a, b = standard["results"][0], threes["results"][0]
assert a["worst_gate"] == b["worst_gate"] == "PREFIX_GENERATE", (a["worst_gate"], b["worst_gate"])
assert a["log2_failure_per_run"] < b["log2_failure_per_run"] < 0, (a, b)
assert a["log2_failure_per_run"] >= a["worst_gate_log2_failure"]  # a sum of terms
PY
expect 0 "fail/run" --backend plaintext --ops add.sklansky --widths 4 --reps 1 --warmup 0 \
  --json "$tmp/cp.json"
python3 -c "import json,sys; r = json.load(open(sys.argv[1])); \
assert r['bootstrapping_key_unroll'] is None and r['results'][0]['log2_failure_per_run'] is None" \
  "$tmp/cp.json" || fail "bench_circuits: the plaintext backend's report claims a failure bound"
expect 2 "--unroll applies to the encrypted backends, not to plaintext" --backend plaintext \
  --unroll 2
expect 2 "--unroll: 5 is out of range; expected an integer in 1..4" --unroll 5
expect 0 "--fused-bundle B" --help
# circuit_costs' vector and matrix rows are not element-wise operations: named as such.
expect 2 "--ops: no element-wise operation 'sum.8' (the vector and matrix rows of circuit_costs" \
  --backend plaintext --ops sum.8
# CPU options where no CPU backend runs are refused, not ignored.
expect 2 "--task-size applies to the sequential and openmp backends, not to plaintext" \
  --backend plaintext --ops add.sklansky --widths 4 --task-size 64
# An option is given once; a name or width listed twice runs once.
expect 2 "--reps is given twice ('1', then '2'); give it once" --backend plaintext --reps 1 \
  --reps 2
"$program" --backend plaintext --ops and,and --ops and --widths 4,4 --reps 1 --warmup 0 \
  >"$tmp/out" 2>&1 || fail "bench_circuits with repeated names exited $?"
[[ "$(grep -c '^and ' "$tmp/out")" == 1 ]] ||
  { cat "$tmp/out"; fail "bench_circuits ran a repeated name twice"; }
grep -q "1 timed run (after 0 warmup)" "$tmp/out" ||
  fail "bench_circuits: '1 timed run' in the header"

program="$circuit_costs"
expect 0 "| \`and\` | bitwise AND | u, s | 8 / 1 |" --ops and,and --widths 8,8
expect 2 "--op: abs takes signed operands only, which --signedness u leaves out" \
  --op abs,and --signedness u
expect 2 "--op: no operation 'nope'" --op nope

program="$gate_demo"
"$program" --help 2>/dev/null | grep -q -- "--help                this text" ||
  fail "gate_demo --help: not on stdout"

# The scripts whose settings come from the environment: --help prints them and starts nothing
# (no build, no benchmark rewriting docs/results), any other argument is refused.
program="$bench_circuits_script"
expect 0 "Runs the CPU circuit benchmark" --help
expect 2 "bench_circuits.sh: takes no arguments" --widths 8
# Bad settings are refused by their own names, before any build.
REPS=0 expect 2 "bench_circuits.sh: REPS='0' is not a whole number >= 1"
WIDTHS=8x expect 2 "bench_circuits.sh: WIDTHS='8x' is not a list such as 8,16,32"
BACKEND=cuda expect 2 "bench_circuits.sh: BACKEND='cuda'; expected openmp"
program="$scripts_dir/bench_cpu.sh"
expect 0 "Runs the CPU gate benchmarks" --help
expect 2 "bench_cpu.sh: takes no arguments" --batch 1
program="$scripts_dir/update_circuit_costs.sh"
expect 0 "regenerates the cost table" -h
expect 2 "update_circuit_costs.sh: takes no arguments" x
program="$scripts_dir/setup.sh"
expect 0 "Installs the Debian packages the build needs" --help
expect 2 "setup.sh: takes no arguments (see --help), got '--jobs'" --jobs
JOBS=abc BUILD_DIR="$tmp/setup-build" expect 2 "setup.sh: JOBS='abc' is not a whole number"
program="$scripts_dir/update_circuit_costs.sh"
BUILD_DIR="$tmp/no-build" expect 1 "$tmp/no-build is not a configured build"
# scripts/quickstart.sh --help: its header, and no setup or build without one.
program="$scripts_dir/quickstart.sh"
BUILD_DIR="$tmp/no-build" expect 0 "README command 1" --help
[[ ! -e "$tmp/no-build" ]] || fail "quickstart.sh --help started a build"

# scripts/fuzz.sh: bad numbers refused before any build; a failed build of the harnesses stops
# the run instead of fuzzing with the binaries an earlier build left (here a stand-in harness
# in a build folder that cannot build; clang stand-ins, as nothing is configured).
program="$scripts_dir/fuzz.sh"
FUZZ_TIMEOUT=abc expect 2 "fuzz.sh: FUZZ_TIMEOUT='abc' is not a whole number" regression_csv
expect 2 "fuzz.sh: --seconds needs a whole number >= 1" --seconds 08 regression_csv
fake_build="$tmp/fuzz-build"
mkdir -p "$fake_build" "$tmp/bin"
: >"$fake_build/build.ninja"
printf '#!/bin/sh\necho stale harness\n' >"$fake_build/fuzz_regression_csv"
chmod +x "$fake_build/fuzz_regression_csv"
ln -sf "$(command -v true)" "$tmp/bin/clang"
ln -sf "$(command -v true)" "$tmp/bin/clang++"
PATH="$tmp/bin:$PATH" FUZZ_BUILD_DIR="$fake_build" \
  expect 1 "fuzz.sh: the build of the harnesses failed" --seconds 1 regression_csv

program="$circuit_demo"
expect 0 "integer width, 5..16" --help
expect 0 "toy_k2_INSECURE" --help
expect 2 "--width: 4 is out of range; expected an integer in 5..16" --width 4

finish "bench programs"
