#!/usr/bin/env bash
# scripts/gpu_run.sh as the first GPU session will run it, as a dry run on the CUDA emulator
# (GPU_RUN_EMULATED=1: the *_emulated programs of this build, toy parameters, small sizes): the
# env, apps, bench and circuits steps pass, the steps that need a GPU say so and are skipped,
# every report is valid JSON with exact results, the forced launch shapes, the forced chunking and
# the pinned transfers happened, and summary.md holds the gate and circuit tables of every report
# and the launch-shape study. About 3 minutes on 2 cores.
#   run_gpu_run_emulated.sh REPO_ROOT BUILD_DIR WORK_DIR
set -uo pipefail
repo="$1" build="$2" work="$3"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# A mode that is neither 0 nor 1, an unknown step, a DEADLINE or SHAPE_BATCHES that is not
# numbers are refused before anything runs.
msg="$(GPU_RUN_EMULATED=yes "$repo/scripts/gpu_run.sh" "$work/refused" env 2>&1)"
[[ $? -eq 2 && "$msg" == *"GPU_RUN_EMULATED='yes'; expected 1"* ]] || fail "GPU_RUN_EMULATED=yes: $msg"
msg="$(GPU_RUN_EMULATED=1 "$repo/scripts/gpu_run.sh" "$work/refused" benchmark 2>&1)"
[[ $? -eq 2 && "$msg" == *"unknown step 'benchmark'"* ]] || fail "unknown step: $msg"
msg="$(DEADLINE=soon GPU_RUN_EMULATED=1 "$repo/scripts/gpu_run.sh" "$work/refused" env 2>&1)"
[[ $? -eq 2 && "$msg" == *"DEADLINE='soon'; expected seconds"* ]] || fail "DEADLINE=soon: $msg"
# refused VAR EXPECTED VALUE...: gpu_run.sh exits with 2 and says EXPECTED (after
# "VAR='VALUE'; ") for each VALUE of the environment variable VAR.
refused() {
  local var="$1" want="$2" bad msg
  shift 2
  for bad in "$@"; do
    msg="$(env "$var=$bad" GPU_RUN_EMULATED=1 "$repo/scripts/gpu_run.sh" "$work/refused" env 2>&1)"
    [[ $? -eq 2 && "$msg" == *"$var='$bad'; $want"* ]] || fail "$var=$bad: $msg"
  done
}
refused SHAPE_BATCHES "expected batch sizes" "1,x" "0,64" "64,"
refused HOTSPOT_BATCH "expected one batch size" "0" "1,64" "x"
refused UNROLLS "expected unrolled key forms 2 and/or 3" "1" "4" "2,3"
refused BUNDLE_UNROLLS "expected unrolled key forms 2, 3 and/or 4" "1" "5" "2,3"
refused BUNDLE_BATCHES "expected batch sizes" "1,,8" "x" "0,1"
refused LANE_BATCHES "expected batch sizes" "16384," "x" "0"
refused STAGE_BATCHES "expected batch sizes" "16384," "x" "0"
refused DEFAULT_UNROLLS "expected unrolled key forms 2, 3 and/or 4" "1" "5" "4,3"
refused DEFAULT_BATCHES "expected batch sizes" "1,,8" "x" "0"
refused COMPARE_ITEM_SECONDS "expected seconds per item" "0" "x" "20s"
rm -rf "$work/refused"

# A DEADLINE already past: every command is skipped and named, none is started.
DEADLINE="$(date +%s)" GPU_RUN_EMULATED=1 BUILD_DIR="$build" "$repo/scripts/gpu_run.sh" \
  "$work/late" bench > /dev/null 2>&1 || fail "a run past its DEADLINE failed"
grep -qF "bench_gates_gpu_toy_INSECURE: skipped: " "$work/late/gpu_run.log" ||
  fail "no skipped command in the late run's log"
grep -qF "gpu_run: skipped at the DEADLINE: bench_gates_gpu_toy_INSECURE " "$work/late/gpu_run.log" ||
  fail "the late run's log does not name what it skipped"
ls "$work/late"/bench_gates_*.json > /dev/null 2>&1 && fail "a command ran past the DEADLINE"
rm -rf "$work/late"

# SHAPE_ARGS reaches every forced shape's run: an unrolled key on the shape asked for.
SHAPES="c2" SHAPE_BATCHES=1,3 SHAPE_ARGS="--unroll 2" GPU_RUN_EMULATED=1 BUILD_DIR="$build" \
  "$repo/scripts/gpu_run.sh" "$work/shape_args" shapes > /dev/null 2>&1 ||
  fail "the shapes step with SHAPE_ARGS failed"
python3 - "$work/shape_args/bench_gates_gpu_toy_INSECURE_fused_c2.json" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bootstrapping_key_unroll"] == 2, r["bootstrapping_key_unroll"]
# product_rounding (core/bootstrap.hpp): toy_INSECURE in pairs, 27.7 sigma, exact.
assert r["products_round_exactly"] is True, r["products_round_exactly"]
assert 27.5 < r["product_rounding_margin"] < 28, r["product_rounding_margin"]
res = [x for run in r["runs"] for x in run["results"]]
assert [x["batch"] for x in res] == [1, 3], res
assert all(x["fused_cluster_blocks"] == 2 and x["errors"] == 0 for x in res), res
PY
  fail "the SHAPE_ARGS report"
rm -rf "$work/shape_args"

GPU_RUN_EMULATED=1 BUILD_DIR="$build" "$repo/scripts/gpu_run.sh" "$work" \
  env apps bench shapes circuits slow sanitize profile quick stalls hotspots variants unrolled bundle lanes \
  defaults stage compare \
  > "$work/stdout.txt" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  cat "$work/stdout.txt"
  fail "gpu_run.sh exited with $rc"
fi
log="$work/gpu_run.log"
grep -qF "gpu_run: every step passed" "$log" || fail "no 'every step passed' in gpu_run.log"
for step in slow sanitize profile stalls hotspots variants stage; do
  grep -qF "$step: needs a GPU: skipped in the emulated dry run" "$log" || fail "$step was not skipped"
done
grep -qF "mode: dry run on the CUDA emulator" "$work/environment.txt" || fail "environment.txt"
# The compare step: the comparison runs' gpu rows, every one exact.
grep -q ", 0 WRONG$" "$work/compare_gpu.log" ||
  fail "the compare step: $(tail -3 "$work/compare_gpu.log")"
grep -q ",gpu,toy_INSECURE," "$work/compare/results.csv" || fail "the compare step's results.csv"
[[ "$(cat "$work/cli/ab.txt")" == "$(printf ' 19 -10\n-13  50')" ]] || fail "CLI matmul: $(cat "$work/cli/ab.txt")"
ls "$work"/cli/*.tgsk >/dev/null 2>&1 && fail "the secret key was left in the output folder"

python3 - "$work" <<'PY' || fail "the reports"
import glob, json, os, sys
d = sys.argv[1]
def load(name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)
for engine in ("cufft", "fused"):
    r = load(f"linear_regression_gpu_{engine}.json")
    assert r["all_exact"] is True, engine
gates = load("bench_gates_gpu_toy_INSECURE.json")
assert gates["device"]["name"] == "torusgate CUDA emulator (CPU)", gates["device"]
assert gates["fused_max_registers"] == 0, gates["fused_max_registers"]
runs = {(run["engine"], run["key_switching"]) for run in gates["runs"]}
assert runs == {(e, k) for e in ("cufft", "fused") for k in ("gather", "tensor_core")}, runs
for path in glob.glob(os.path.join(d, "bench_gates_gpu_*.json")):
    for run in load(os.path.basename(path))["runs"]:
        for res in run["results"]:
            assert res["errors"] == 0, (path, res)
            assert res["phases_ms_median"]["blind_rotation"] > 0, (path, res)
for form, tag in ((2, "unrolled"), (3, "unrolled3")):  # UNROLLS' default: pairs and threes
    for suffix in ("", "_1x1", "_l2", "_cufft"):
        r = load(f"bench_gates_gpu_toy_INSECURE_{tag}{suffix}.json")
        assert r["bootstrapping_key_unroll"] == form, (tag, suffix)
        assert all(res["errors"] == 0 for run in r["runs"] for res in run["results"]), (tag, suffix)
    # Two lanes, asked for (docs/gpu.md section 6.27); and in the lanes step.
    lane_runs = load(f"bench_gates_gpu_toy_INSECURE_lanes{form}.json")
    assert lane_runs["bootstrapping_key_unroll"] == form
    assert [(x["batch"], x["fused_lanes"], x["errors"]) for run in lane_runs["runs"]
            for x in run["results"]] == [(16, 2, 0)], lane_runs
    lanes = [res["fused_lanes"] for run in load(f"bench_gates_gpu_toy_INSECURE_{tag}_l2.json")["runs"]
             for res in run["results"]]
    assert lanes and all(x == 2 for x in lanes), (tag, lanes)
for form in (2, 3, 4):  # bundled keys against without, pairs and threes; fours bundled only
    assert form != 4 or not os.path.exists(os.path.join(d, "bench_gates_gpu_toy_INSECURE_bundle4_off.json"))
    for mode in (("on", "overlap") if form == 4 else ("off", "on", "overlap")):
        r = load(f"bench_gates_gpu_toy_INSECURE_bundle{form}_{mode}.json")
        assert r["bootstrapping_key_unroll"] == form, (form, mode)
        assert r["runs"][0]["fused_bundle_overlap_option"] == (2 if mode == "overlap" else 0)
        res = [x for run in r["runs"] for x in run["results"]]
        assert [x["batch"] for x in res] == [1, 8, 22], (form, mode, res)
        assert all(x["errors"] == 0 for x in res), (form, mode, res)
        bundled = {"off": 0, "on": 1, "overlap": 2}[mode]
        want = [bundled if x["fused_cluster_blocks"] > 1 else 0 for x in res]
        assert [x["fused_bundle"] for x in res] == want, (form, mode, res)
        assert mode == "off" or any(want), (form, res)  # batch 1 takes a cluster
assert load("bench_gates_gpu_toy_INSECURE.json")["bootstrapping_key_unroll"] == 1
# The defaults step: every option automatic, each key form (DEFAULT_UNROLLS: 4 3 2), the
# standard key after the first, fused engine, the automatic key switching.
for form in (1, 4, 3, 2):
    r = load("bench_gates_gpu_toy_INSECURE_defaults" + ("" if form == 1 else f"_u{form}") + ".json")
    assert r["bootstrapping_key_unroll"] == form, form
    assert [(run["engine"], run["key_switching"]) for run in r["runs"]] == [("fused", "automatic")], r["runs"]
    run = r["runs"][0]
    assert not any(run.get(o) for o in ("fused_groups_option", "fused_rotations_option",
                                        "fused_cluster_option", "fused_lanes_option",
                                        "fused_bundle_option", "fused_bundle_overlap_option")), run
    res = run["results"]
    assert [(x["batch"], x["errors"]) for x in res] == [(1, 0), (16, 0)], (form, res)
    # Fours run on bundled clusters only; the others bundle where a chunk takes clusters.
    assert form != 4 or all(x["fused_bundle"] > 0 for x in res), res
with open(os.path.join(d, "gpu_run.log")) as f:
    order = [line.split()[2].rstrip(":") for line in f if "bench_gates_gpu_toy_INSECURE_defaults" in line
             and line.split()[2].endswith(":") and " ok" not in line]
assert order == [f"bench_gates_gpu_toy_INSECURE_defaults{x}" for x in ("_u4", "", "_u3", "_u2")], order
# The lanes step: the standard key's automatic shape, pairs and threes on 1x1 (two lanes:
# above).
assert load("bench_gates_gpu_toy_INSECURE_lanes1.json")["bootstrapping_key_unroll"] == 1
for form in (2, 3):
    one = load(f"bench_gates_gpu_toy_INSECURE_lanes{form}_1x1.json")
    assert one["bootstrapping_key_unroll"] == form
    assert [(x["fused_lanes"], x["fused_groups"], x["errors"]) for run in one["runs"]
            for x in run["results"]] == [(1, 1, 0)], one
assert {run["key_switching"] for f in ("lanes1", "lanes2", "lanes3", "lanes2_1x1", "lanes3_1x1")
        for run in load(f"bench_gates_gpu_toy_INSECURE_{f}.json")["runs"]} == {"tensor_core"}
assert {run["engine"] for run in load("bench_gates_gpu_toy_INSECURE_unrolled_cufft.json")["runs"]} == {"cufft"}
quick = load("bench_gates_gpu_toy_INSECURE_quick.json")
assert {(r["engine"], r["key_switching"]) for r in quick["runs"]} == {("fused", "gather"), ("fused", "tensor_core")}
assert load("bench_gates_gpu_toy_INSECURE_quick_cufft.json")["runs"][0]["engine"] == "cufft"
for shape in ("1x1", "2x1", "4x1", "1x2", "1x4", "c2", "c4", "l2"):
    run = load(f"bench_gates_gpu_toy_INSECURE_fused_{shape}.json")["runs"][0]
    got = {f"l{r['fused_lanes']}" if r["fused_lanes"] > 1
           else f"c{r['fused_cluster_blocks']}" if r["fused_cluster_blocks"] > 1
           else f"{r['fused_groups']}x{r['fused_rotations_per_block']}" for r in run["results"]}
    assert got == {shape}, (shape, got)
for run in load("bench_gates_gpu_toy_INSECURE_budget.json")["runs"]:
    assert all(r["chunks"] > 1 for r in run["results"]), ("not chunked", run["engine"])
assert load("bench_gates_gpu_toy_k2_INSECURE.json")["parameters"]["glwe_dimension"] == 2
# Every run records its transfers; the _pinned report's one run is the cuFFT engine's, pinned.
for path in glob.glob(os.path.join(d, "bench_gates_gpu_*.json")):
    for run in load(os.path.basename(path))["runs"]:
        pinned = path.endswith("_pinned.json")
        assert run["transfer"] == ("pinned" if pinned else "direct"), (path, run["transfer"])
        assert run["staging_bytes"] == 8 << 20, (path, run["staging_bytes"])
pinned = load("bench_gates_gpu_toy_INSECURE_pinned.json")["runs"]
assert [(r["engine"], r["transfer"]) for r in pinned] == [("cufft", "pinned")], pinned
assert [r["batch"] for r in pinned[0]["results"]] == [1, 16], pinned[0]["results"]
for engine, ks in (("cufft", "gather"), ("fused", "automatic")):
    for suffix in ("", "_lanes4"):
        r = load(f"bench_circuits_gpu_toy_INSECURE_{engine}{suffix}.json")
        assert (r["gpu_engine"], r["key_switching"]) == (engine, ks), r["gpu_engine"]
        assert r["bootstrapping_key_unroll"] == 1, r["bootstrapping_key_unroll"]
        assert len(r["results"]) == 3, r["results"]
        for res in r["results"]:
            assert res["errors"] == 0 and res["lanes"] == (4 if suffix else 1), res
            assert len(res["upload_s"]) == res["reps"] and 0 <= res["transfer_share_median"] < 1, res
            assert res["log2_failure_per_run"] < 0, res
        assert r["transfer"] == "direct", r["transfer"]
# The fused engine's widest operations on one element with keys in threes.
r = load("bench_circuits_gpu_toy_INSECURE_fused_unroll3.json")
assert (r["gpu_engine"], r["bootstrapping_key_unroll"]) == ("fused", 3), r
assert [(res["width"], res["lanes"], res["errors"]) for res in r["results"]] == [(8, 1, 0)] * 3, r
r = load("bench_circuits_gpu_toy_INSECURE_cufft_lanes4_pinned.json")
assert (r["gpu_engine"], r["transfer"], r["staging_bytes"]) == ("cufft", "pinned", 8 << 20), r
assert r["backend_description"].endswith("pinned transfers (8 MiB staging)"), r
assert [(res["width"], res["lanes"], res["errors"]) for res in r["results"]] == [(8, 4, 0)] * 3, r
PY

s="$work/summary.md"
for text in "## toy_INSECURE: \`bench_gates_gpu_toy_INSECURE.json\`" \
    "Engine fused, key switching tensor_core" "## toy_k2_INSECURE: \`bench_gates_gpu_toy_k2_INSECURE.json\`" \
    "## Circuits, toy_INSECURE: \`bench_circuits_gpu_toy_INSECURE_fused_lanes4.json\`" \
    "| mul.wrapping.dadda | u8 | 4 | 408 | 9 |" "## Fused launch shapes, toy_INSECURE" \
    "| batch | chosen | 1x1 | 1x2 | 1x4 | 2x1 | 4x1 | c2 | c4 | l2 | fastest |" \
    "## toy_INSECURE: \`bench_gates_gpu_toy_INSECURE_pinned.json\`" \
    "Engine cuFFT-batched, key switching gather, pinned transfers (8 MiB staging), device keys" \
    "## Circuits, toy_INSECURE: \`bench_circuits_gpu_toy_INSECURE_cufft_lanes4_pinned.json\`" \
    "## Circuits, toy_INSECURE, key in threes (--unroll 3): \`bench_circuits_gpu_toy_INSECURE_fused_unroll3.json\`" \
    "With an **unrolled bootstrapping key** (\`--unroll 2\`" \
    "With an **unrolled bootstrapping key** (\`--unroll 3\`" \
    "With an **unrolled bootstrapping key** (\`--unroll 4\`: key bits in fours, on bundled keys"; do
  grep -qF -- "$text" "$s" || { cat "$s"; fail "summary.md lacks: $text"; }
done
# The bundle step's A/B tables, whose emulated times decide nothing.
for text in "## A/B: Bundled keys, keys in threes" "## A/B: Bundled keys, keys in fours" \
    "- \`on\` against \`off\` at batch 1: on the CUDA emulator, whose times decide nothing"; do
  grep -qF -- "$text" "$s" || { cat "$s"; fail "summary.md lacks: $text"; }
done
! grep -qF -- "make --fused-bundle" "$s" || fail "summary.md decides from emulated times"
echo "gpu_run.sh dry run on the emulator: ok"
