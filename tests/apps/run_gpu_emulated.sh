#!/usr/bin/env bash
# The programs' GPU path as a user runs it, on the CUDA emulator (gpu/emu; docs/gpu.md
# section 2.1): linear_regression (the README's main job), gate_demo and circuit_demo built
# as *_emulated, so `--backend best` finds a CUDA device and the CudaBackend runs its real
# host code and kernels on the CPU. Checks that best picks the GPU, that both engines and both
# key switchings give exact results, that GPU options are refused with a CPU backend and
# --threads with the GPU, and that without a device best falls back to OpenMP while an
# explicit gpu is refused; and, with bench_gates and bench_circuits, the transfer options:
# pinned transfers run and are reported, a bad mode or size and a CPU backend are refused.
# Toy parameters; about a minute on 2 cores.
#   run_gpu_emulated.sh LINEAR_REGRESSION_EMULATED GATE_DEMO_EMULATED CIRCUIT_DEMO_EMULATED
#                       BENCH_GATES_EMULATED BENCH_CIRCUITS_EMULATED
set -uo pipefail
regression="$1"
gate_demo="$2"
circuit_demo="$3"
bench_gates="$4"
bench_circuits="$5"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

program="$regression"
expect 0 "backend      gpu(torusgate CUDA emulator (CPU)), fused blind rotation" \
  --params toy_INSECURE --dataset 8x2 --no-progress --json "$tmp/report.json"
grep -q "all encrypted results are exact" "$tmp/out" || fail "best: results not exact"
python3 - "$tmp/report.json" <<'PY' || fail "the JSON report of the GPU run is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["backend"].startswith("gpu("), r["backend"]
assert "fused blind rotation" in r["backend_description"], r["backend_description"]
assert r["all_exact"] is True and r["threads"] == 1
PY
expect 0 "all encrypted results are exact" --backend gpu --gpu-engine cufft \
  --key-switching tensor_core --params toy_INSECURE --dataset 6x2 --kind binary --beta plain \
  --no-progress
grep -qF "cuFFT-batched blind rotation, tensor_core key switching" "$tmp/out" ||
  fail "--gpu-engine cufft --key-switching tensor_core did not run them"
expect 2 "--gpu-engine is a GPU option: it applies to --backend gpu, not to openmp" \
  --backend openmp --gpu-engine fused
expect 2 "--device is a GPU option: it applies to --backend gpu, not to plaintext" \
  --backend plaintext --device 1
expect 2 "--threads applies to the openmp backend, not to gpu" --backend gpu --threads 2
expect 2 "unknown GPU engine 'cuda'" --gpu-engine cuda
# Without a device: best is OpenMP, an explicit gpu is refused with the reason.
export TORUSGATE_CUDA_EMU_DEVICES=0
expect 0 "backend      openmp(" --params toy_INSECURE --dataset 6x2 --beta none --no-progress
expect 2 "--backend gpu: no CUDA device is available" --backend gpu
unset TORUSGATE_CUDA_EMU_DEVICES
# The second device (the emulator has two), and a device that does not exist.
expect 0 "all encrypted results are exact" --backend gpu --device 1 --params toy_INSECURE \
  --dataset 6x2 --beta none --no-progress
expect 2 "--device 7: this machine has 2 CUDA devices, numbered from 0" --backend gpu --device 7 --params toy_INSECURE --dataset 6x2 --no-progress
# GPU options the parameter set cannot use: refused before the keys are made.
expect 2 "--fused-groups 3 but parameter set 'toy_INSECURE' takes 0 (automatic), 1, 2 (k+1) or" \
  --backend gpu --fused-groups 3 --params toy_INSECURE --dataset 6x2 \
  --no-progress
grep -q "keys made" "$tmp/out" && fail "linear_regression: keys made before a bad GPU option"

program="$gate_demo"
expect 0 "all gates correct" --params toy_INSECURE
grep -qF "backend      gpu(" "$tmp/out" || fail "gate_demo: best did not pick the GPU"
expect 0 "all gates correct" --params toy_k2_INSECURE --backend gpu --gpu-engine fused
expect 2 "--key-switching is a GPU option: it applies to --backend gpu, not to sequential" \
  --backend sequential --key-switching gather

program="$circuit_demo"
expect 0 "all results correct" --params toy_INSECURE --key-switching tensor_core
grep -qF "tensor_core key switching" "$tmp/out" || fail "circuit_demo: not the tensor-core key switching"

# --transfer and --staging-mb (apps::parse_gpu_option): refusals name the option and what it
# takes; pinned transfers run, exact, and the reports say so.
for program in "$bench_gates" "$bench_circuits"; do
  expect 2 "--transfer: unknown transfer mode 'bogus'; expected direct or pinned" --transfer bogus
  expect 2 "--staging-mb: 0 is out of range; expected an integer in 1..1024" --staging-mb 0
  expect 2 "--transfer is a GPU option: it applies to --backend gpu, not to openmp" \
    --backend openmp --transfer pinned --staging-mb 16
  expect 2 "--staging-mb is a GPU option: it applies to --backend gpu, not to sequential" \
    --backend sequential --staging-mb 16
done
expect 0 "  --transfer T        direct (default) | pinned" --help

program="$bench_gates"
# Every engine's options before the keys and the first engine's run (cuFFT, then fused):
# fused_bundle 1 with a key in fours is the fused engine's refusal.
expect 2 "with --gpu-engine fused: a bootstrapping key in fours" --backend gpu \
  --params toy_INSECURE --unroll 4 --fused-bundle 1 --batch 1 --reps 1
grep -q "cuFFT-batched" "$tmp/out" && fail "bench_gates: the cuFFT run ran before the refusal"
expect 2 "--gpu-engine: 'fused' is named twice; each runs once" --backend gpu \
  --params toy_INSECURE --gpu-engine fused,cufft,fused --batch 1 --reps 1
expect 2 "--key-switching: 'gather' is named twice; each runs once" --backend gpu \
  --params toy_INSECURE --key-switching gather,gather --batch 1 --reps 1
# The key stage (docs/gpu.md 6.34) runs N = 512 .. 2048: the toy set's N = 256 is refused.
expect 2 "--fused-key-stage 2 runs the kernels of N = 512, 1024 or 2048, but parameter set" \
  --backend gpu --params toy_INSECURE --gpu-engine fused --fused-key-stage 2 --batch 1 --reps 1
expect 2 "--device 5: this machine has 2 CUDA devices, numbered from 0" --backend gpu \
  --params toy_INSECURE --device 5 --batch 1 --reps 1
expect 0 "cuFFT-batched blind rotation, gather key switching, pinned transfers (1 MiB staging):" \
  --backend gpu --params toy_INSECURE --gpu-engine cufft --key-switching gather --transfer pinned --staging-mb 1 \
  --batch 1,8 --reps 1 --json "$tmp/gates.json"
grep -qF "gather key switching, direct transfers:" "$tmp/out" &&
  fail "bench_gates: a pinned run said direct"
expect 0 "cuFFT-batched blind rotation, gather key switching, direct transfers:" \
  --backend gpu --params toy_INSECURE --gpu-engine cufft --key-switching gather --batch 1 --reps 1
python3 - "$tmp/gates.json" <<'PY' || fail "bench_gates: the JSON of the pinned run"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert [(r["transfer"], r["staging_bytes"]) for r in runs] == [("pinned", 1 << 20)], runs
assert all(res["errors"] == 0 for res in runs[0]["results"]), runs
PY

program="$bench_circuits"
expect 2 "--fused-groups 3 but parameter set" --backend gpu --params toy_INSECURE \
  --fused-groups 3 --ops less \
  --widths 4 --lanes 2 --reps 1
expect 0 "automatic key switching, pinned transfers (2 MiB staging)" --backend gpu \
  --params toy_INSECURE --ops less --widths 4 --lanes 2 --reps 1 --transfer pinned \
  --staging-mb 2 --json "$tmp/circuits.json"
python3 - "$tmp/circuits.json" <<'PY' || fail "bench_circuits: the JSON of the pinned run"
import json, sys
r = json.load(open(sys.argv[1]))
assert (r["transfer"], r["staging_bytes"]) == ("pinned", 2 << 20), r
assert r["backend_description"].endswith(", pinned transfers (2 MiB staging)"), r
assert all(res["errors"] == 0 for res in r["results"]), r["results"]
PY

finish "programs on the emulated GPU"
