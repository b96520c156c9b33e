#!/usr/bin/env bash
# scripts/gpu_call.sh (the next GPU call in one command) as a dry run on the CUDA emulator: the
# stages run under one DEADLINE and each is packed into OUT/results.tgz; the sanitize and
# hotspots steps' commands run with stand-ins for compute-sanitizer and ncu, whose reports go
# into OUT/ncu.tgz only; the fused engine's
# circuits come before the cuFFT engine's; the main job's report is packed; a BUDGET that has
# run out still leaves a pack; bad settings are refused; and SHAPE_ARGS' --reps replaces the
# shapes step's own instead of repeating it (the programs refuse an option given twice).
#   run_gpu_call_emulated.sh REPO_ROOT BUILD_DIR WORK_DIR
set -uo pipefail
repo="$1" build="$2" work="$3"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
call() { GPU_RUN_EMULATED=1 BUILD_DIR="$build" WORK="$work/w" "$repo/scripts/gpu_call.sh" "$@"; }

msg="$(BUDGET=soon call "$work/bad" 2>&1)"
[[ $? -eq 2 && "$msg" == *"BUDGET='soon'; expected seconds"* ]] || fail "BUDGET=soon: $msg"
"$repo/scripts/gpu_call.sh" --help | grep -q "The next GPU call" || fail "--help"

# compute-sanitizer and ncu are stand-ins (tests/apps/fake_tools) that check the steps' options
# and run the programs (hotspots: tfhe_lib_128 at batch 2, the automatic shape and l2s).
PATH="$repo/tests/apps/fake_tools:$PATH" GPU_RUN_FAKE_TOOLS=1 \
  STAGES="env defaults|stage sanitize|hotspots circuits compare" BUDGET=400 call "$work/out" \
  > "$work/call.log" 2>&1
status=$?
((status == 0)) || { cat "$work/call.log"; fail "gpu_call.sh exited $status"; }
[[ -s "$work/out/results.tgz" && ! -e "$work/out/results.tgz.part" ]] || fail "no results.tgz"
mkdir -p "$work/unpacked" && tar xzf "$work/out/results.tgz" -C "$work/unpacked" ||
  fail "results.tgz does not unpack"
grep -q "^ok: $build/apps/bench_gates_emulated" "$work/unpacked/programs.txt" 2>/dev/null ||
  grep -q "^ok: .*bench_gates_emulated" "$work/unpacked/programs.txt" ||
  fail "programs.txt does not list the programs as ok"
for f in environment.txt gpu_run.log summary.md bench_gates_gpu_toy_INSECURE_defaults.json \
         bench_circuits_gpu_toy_INSECURE_fused.json bench_circuits_gpu_toy_INSECURE_cufft.json \
         linear_regression_gpu_fused.json; do
  [[ -s "$work/unpacked/$f" ]] || fail "results.tgz lacks $f"
done
for tool in memcheck racecheck synccheck; do
  grep -q "ERROR SUMMARY: 0 errors" "$work/unpacked/sanitize_$tool.log" 2>/dev/null ||
    fail "the sanitize step's $tool log: $(cat "$work/unpacked/sanitize_$tool.log" 2>&1)"
done
for name in hotspots_2 hotspots_2_l2s; do
  [[ -s "$work/unpacked/${name}_details.log" && -s "$work/unpacked/${name}_sass.csv" ]] ||
    fail "the hotspots step's reports of $name"
  tar tzf "$work/out/ncu.tgz" 2>/dev/null | grep -qx "$name.ncu-rep" ||
    fail "ncu.tgz lacks $name.ncu-rep"
done
tar tzf "$work/out/results.tgz" | grep -q '\.ncu-rep$' && fail "results.tgz holds an ncu report"
grep -q "fused-key-stage 2" "$work/unpacked/gpu_run.log" ||
  fail "the hotspots step did not profile the staged shape l2s"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['all_exact']" \
  "$work/unpacked/linear_regression_gpu_fused.json" || fail "the main job's report"
# The fused engine's circuits first: under a DEADLINE the cuFFT baseline is what is skipped.
order="$(grep -oE 'bench_circuits_gpu_toy_INSECURE_[a-z0-9_]+: ok' "$work/unpacked/gpu_run.log" |
  cut -d: -f1 | tr '\n' ' ')"
first="bench_circuits_gpu_toy_INSECURE_fused bench_circuits_gpu_toy_INSECURE_fused_unroll3 "
[[ "$order" == "$first"* ]] || fail "the circuits' order: $order"

# A budget already spent: every step skipped, and still a pack (with the log saying so).
BUDGET=1 call "$work/late" > "$work/late.log" 2>&1
[[ -s "$work/late/results.tgz" ]] || { cat "$work/late.log"; fail "no pack after a spent budget"; }
tar xzf "$work/late/results.tgz" -O ./gpu_run.log | grep -q "skipped" ||
  fail "the late call's log names no skipped command"

# SHAPE_ARGS' --reps replaces the shapes step's --reps 3 (it used to be given twice).
SHAPES=1x1 SHAPE_BATCHES=1 SHAPE_ARGS="--reps 2" GPU_RUN_EMULATED=1 BUILD_DIR="$build" \
  "$repo/scripts/gpu_run.sh" "$work/shape_reps" shapes > /dev/null 2>&1 ||
  fail "the shapes step with SHAPE_ARGS=--reps 2 failed"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
assert r['runs'][0]['results'][0]['reps'] == 2, r['runs'][0]['results'][0]['reps']" \
  "$work/shape_reps/bench_gates_gpu_toy_INSECURE_fused_1x1.json" || fail "SHAPE_ARGS' --reps"
echo "gpu_call_emulated: ok"
