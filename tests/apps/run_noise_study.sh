#!/usr/bin/env bash
# End-to-end checks of the noise_study binary as a user runs it: a small reproducible run on
# toy parameters with the JSON and markdown reports (parsed and checked), --help, and the exit
# code 2 and message of bad options.
#   run_noise_study.sh BINARY
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

expect 0 "| T(0;8,8,7) (stress) |" --params toy_INSECURE --gates 420 --seed 5 --no-progress \
  --json "$tmp/noise.json" --markdown "$tmp/noise.md"
python3 - "$tmp/noise.json" <<'PY' || fail "the JSON report does not parse or has the wrong content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["program"] == "noise_study" and r["gates_per_set"] == 420 and r["deterministic_seed"] == 5
(s,) = r["sets"]
assert s["parameters"]["name"] == "toy_INSECURE"
assert len(s["gates"]) == 21 and sum(g["gates"] for g in s["gates"]) == 420
for g in s["gates"]:
    assert g["failure"]["unexplained"] == 0 and g["failure"]["decision_failures"] == 0
    assert 0.3 < g["decision"]["variance_ratio"] < 3, g["label"]
    assert g["failure"]["log2_p_model"] < -100
    assert len(g["decision"]["histogram"]["counts"]) == 24
PY
grep -q "^## toy_INSECURE (INSECURE, tests only)" "$tmp/noise.md" || fail "the markdown lacks the set"
grep -q "^| MUX | 2 | 1/8 | 20 (40 bootstraps) |" "$tmp/noise.md" || fail "the markdown lacks the MUX row"
expect 0 "usage: noise_study" --help

expect 2 "--params: unknown parameter set 'toys'" --params toy_INSECURE,toys
expect 2 "--params: parameter set toy_INSECURE is listed twice" --params toy_INSECURE,toy
expect 2 "--gates 3 is fewer than the 21 gate kinds" --gates 3
expect 2 "--kinds: unknown gate kind 'NAN'" --kinds NAN
expect 2 "--threshold 1:1: GateSpec::threshold" --threshold 1:1
expect 2 "unknown argument '--gate'" --gate 5
expect 2 "--json: cannot write to" --params toy_INSECURE --gates 21 --json /nonexistent/dir/n.json
expect 2 "--backend gpu" --backend gpu
# Both report paths are checked before the run, and a refused run leaves an earlier report.
echo '{"earlier": "report"}' >"$tmp/keep.json"
expect 2 "--markdown: cannot write to '$tmp/none/n.md': the folder '$tmp/none' does not exist" \
  --params toy_INSECURE --gates 21 --json "$tmp/keep.json" --markdown "$tmp/none/n.md"
grep -q earlier "$tmp/keep.json" || fail "a refused run emptied the earlier --json report"
# An empty path is refused, not ignored; one file for both reports is refused (exit 2, no run).
expect 2 "--json: the path is empty" --params toy_INSECURE --gates 21 --json ""
expect 2 "--markdown: the path is empty" --params toy_INSECURE --gates 21 --markdown ""
ln -s keep.json "$tmp/link.md"
expect 2 "name the same file; one report would replace the other" --params toy_INSECURE \
  --gates 21 --json "$tmp/keep.json" --markdown "$tmp/link.md"
grep -q earlier "$tmp/keep.json" || fail "a refused run emptied the earlier --json report"
expect 2 "--threshold: '99999999999:1': 99999999999 is out of range; expected an integer in -8..8" \
  --threshold 99999999999:1
# A kind with one gate has no sample variance: n/a, not 0.
expect 0 "| NAND | 2 | 1/8 | 1 | n/a | n/a | n/a | n/a | n/a |" --params toy_INSECURE --gates 15 \
  --kinds fixed --seed 1 --no-progress
# The reports' paths as printed: a terminal's escape sequence in them stays inert (\x1B).
esc=$'\e[31m'
mkdir -p "$tmp/d$esc"
expect 0 "markdown written to $tmp/d\x1B[31m/n.md" --params toy_INSECURE --gates 15 \
  --kinds fixed --seed 1 --no-progress --json "$tmp/d$esc/n.json" --markdown "$tmp/d$esc/n.md"
grep -qF "JSON written to $tmp/d\x1B[31m/n.json" "$tmp/out" || fail "the JSON path, escaped"
grep -qF "$esc" "$tmp/out" && fail "a report's path reached the terminal raw"

finish "noise_study"
