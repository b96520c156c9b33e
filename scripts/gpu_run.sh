#!/usr/bin/env bash
# The GPU run of the CUDA backend (docs/gpu.md), one command on a machine with an NVIDIA GPU:
# configure and build with CUDA, run the host-side tests, the GPU tests (tests_gpu, the slow
# 10^6-gate run included) and bench_gates on the GPU with the issue's batch sizes, writing
# every log and docs-ready JSON into OUT_DIR (gpu_run.log: what ran, and which step failed).
#   scripts/gpu_run.sh OUT_DIR [STEP...]
# STEPs (default: env build host test apps slow bench shapes circuits sanitize profile stalls):
#   env     nvidia-smi, nvcc, cmake versions          -> environment.txt
#   build   configure (CUDA required) and build       -> build.log
#   host    tests_gpu_host (CPU side of the backend)  -> tests_gpu_host.log
#   test    tests_gpu without [slow]                  -> tests_gpu.log
#   apps    the main job (linear_regression) on the   -> linear_regression_gpu_*.json/.log,
#           GPU with each engine, gate_demo,              gate_demo_gpu.log, ...
#           circuit_demo, torusgate eval
#   slow    tests_gpu [slow] (10^6 tfhe_lib_128 gates) -> tests_gpu_slow.log
#   bench   bench_gates --backend gpu, both engines,   -> bench_gates_gpu_*.json/.log
#           both key switchings; pinned transfers
#           (cuFFT engine), no graphs, the other sets,
#           a small memory budget
#   shapes  bench_gates, every fused launch shape     -> bench_gates_gpu_*_fused_*.json/.log
#           forced (clusters included)
#   circuits bench_circuits --backend gpu, each engine: -> bench_circuits_gpu_*.json/.log
#           the default adder, less and multiplier at
#           8, 16, 32 bits, one element and 64 (DESIGN.md
#           section 11: 32-bit add, multiply, transfer share);
#           32 bits, 64 elements, pinned transfers; 32
#           bits, one element, fused, keys in threes
#   sanitize compute-sanitizer memcheck, racecheck and  -> sanitize_*.log
#           synccheck (SANITIZE_TOOLS)
#           on a small batch of every engine
#   profile Nsight Compute (ncu) counters of the fused -> profile_*.log
#           kernel: DRAM and L2 bytes, FP64 instructions (skipped without ncu)
#   quick   a change's check on a short lease: the      -> bench_gates_gpu_*_quick*.json/.log
#           fused engine at the issue's batch sizes,
#           both key switchings; the cuFFT engine at
#           small batches (3 repetitions)
#   stalls  ncu warp states and scheduler statistics   -> stalls_*.log
#           of the rotation kernels at batches 1 and
#           16384: what the warps wait for
#   hotspots ncu at batch HOTSPOT_BATCH (16384): the    -> hotspots_B[_SHAPE]_details.log,
#           rotation kernel's stall reasons per SASS        hotspots_B[_SHAPE]_sass.csv
#           instruction, its instruction mix, caches
#           and pipes; the automatic shape and each of
#           HOTSPOT_SHAPES
#   unrolled bench_gates with unrolled keys (--unroll    -> bench_gates_gpu_*_unrolled*.json/.log
#           of each of UNROLLS; 3: *_unrolled3*):
#           the fused engine at the issue's batch
#           sizes, both key switchings, its forced
#           1x1 at batches 1 and 16384 and two lanes
#           (l2) at 16384 and 65536; the cuFFT
#           engine at small batches; the standard key's
#           quick step beside it for the A/B
#   bundle  bench_gates with unrolled keys (BUNDLE_     -> bench_gates_gpu_*_bundle*_{off,on,overlap}.json/.log
#           UNROLLS, default 2 3 4), the fused engine
#           at BUNDLE_BATCHES (1,8,22) with
#           --fused-bundle 1 and 2, then 2 with
#           --fused-bundle-overlap 2: the group steps on
#           bundled keys against without, and the
#           rotation started while they are made (fours:
#           on and overlap only)
#   lanes   large batches on two lanes (LANE_BATCHES, -> bench_gates_gpu_*_lanes{1,2,3}.json/.log,
#           default 16384,65536): the standard key's     bench_gates_gpu_*_lanes{2,3}_1x1.json/.log
#           automatic shape (l2), keys in pairs and
#           threes with --fused-lanes 2 and on 1x1;
#           tensor-core key switching (docs/gpu.md
#           sections 6.27 and 6.38: the A/B in one
#           short call)
#   defaults what a user gets: the fused engine with    -> bench_gates_gpu_*_defaults.json/.log,
#           every option automatic, keys in each of         bench_gates_gpu_*_defaults_u{4,3,2}.json/.log
#           DEFAULT_UNROLLS (fours, threes, pairs) at
#           DEFAULT_BATCHES (1,8,22,64,1024) and the
#           standard key at the issue's batch sizes (after
#           the first unrolled form: under a DEADLINE,
#           issue 5's two targets come first)
#   stage   large batches with the key stage (docs/      -> bench_gates_gpu_*_stage_{l2,1x1}_{off,on}_{1,2}.json/.log
#           gpu.md section 6.34; STAGE_BATCHES, default
#           16384,65536): the standard key's automatic
#           shape (two lanes) and one lane (1x1), each with
#           --fused-key-stage 1 and 2, tensor-core key
#           switching, in two rounds (needs a GPU: the
#           emulated run's toy set has N = 256)
#   compare the comparison runs on the GPU backend     -> compare/results.{jsonl,json,csv},
#           (compare_backends, docs/comparison.md):         compare_gpu.log
#           the committed CPU results resumed with
#           the gpu backend at tfhe_lib_80 and
#           tfhe_lib_128, each item past
#           COMPARE_ITEM_SECONDS of estimated time
#           skipped, so that their tables and plots
#           set the GPU beside the CPU backends
#   variants bench_gates of each variant build          -> bench_gates_gpu_variant_*.json/.log
#           (VARIANTS_DIR/NAME/bench_gates, made by
#           scripts/gpu_variant.sh), fused engine,
#           batches 1 and 16384: A/B of compile-time
#           choices on one warm machine
# After bench or circuits, summary.md (scripts/gpu_summary.py) has every report's tables and
# the targets, met or not. Each command it runs is limited by STEP_TIMEOUT seconds (default
# 540) and a failing step does not stop the others; the exit status is 1 if any step failed.
# Steps may run in separate calls (the build directory and unpacked libraries are reused):
# where one call may take at most 10 minutes, run `env build host test`, then `apps slow`,
# then `bench shapes circuits`, then `sanitize profile`. For a short lease, build here
# (scripts/gpu_prebuilt.sh) and run the steps without `build` under a DEADLINE.
# Environment:
#   BUILD_DIR   build directory (default build-gpu-run)
#   CUDA_ARCH   CMAKE_CUDA_ARCHITECTURES (default native: the GPU present at configure time)
#   JOBS        parallel build jobs (default: all cores)
#   DEPS_DIR    folder of .deb files to unpack when FFTW, libsodium, Catch2, CLI11 or
#               pkg-config are missing (default .deps; scripts/gpu_deps.sh fills it)
#   DEPS_ROOT   where to unpack them (default /opt/deps, else .deps/root when not writable)
#   BENCH_REPS  timed repetitions per batch size (default 5)
#   VARIANTS_DIR  folder of variant builds for the variants step (default .gpuvar)
#   VARIANT_ARGS  more bench_gates arguments for the variants step (space-separated), the
#               same for every variant (e.g. "--fused-cluster-points 4": wide clusters at batch 1;
#               a --reps or --batch here replaces the step's own 3 and 1,16384)
#   SHAPES      the shapes step's shapes, GxR (groups x rotations per block), cC (a cluster
#               of C blocks, each column's owner summing it: --fused-cluster-sums 1), wC (a
#               wide cluster: 4 points per thread), cCe or wCe (every block sums its column:
#               --fused-cluster-sums 2) or lP (P rotations per thread), 1x1s or lPs (the key
#               stage: --fused-key-stage 2), space-separated (default all but the staged)
#   SHAPE_BATCHES  the shapes step's batch sizes, comma-separated positive numbers (default
#               1,64,1024,16384; empty: the default)
#   LANE_BATCHES  the lanes step's batch sizes, comma-separated positive numbers (default
#               16384,65536; empty: the default)
#   STAGE_BATCHES  the stage step's batch sizes, comma-separated positive numbers (default
#               16384,65536; empty: the default)
#   SHAPE_ARGS  more bench_gates arguments for the shapes and hotspots steps (space-separated),
#               e.g. "--unroll 2": every forced shape with an unrolled bootstrapping key (a
#               --reps, --batch or --warmup here replaces the step's own; the shape's own
#               options may not be repeated)
#   HOTSPOT_SHAPES  shapes the hotspots step profiles besides the automatic one (default
#               "1x1": one rotation per block, beside the automatic l2 of tfhe_lib_128 at
#               16384; "l2s": two lanes with the key stage; empty: none)
#   HOTSPOT_BATCH  the hotspots step's batch size (default 16384; 1 profiles the batch-1
#               clusters: HOTSPOT_BATCH=1 HOTSPOT_SHAPES=w6 profiles c6, chosen, and w6)
#   DEFAULT_UNROLLS  the defaults step's unrolled key forms, in order, space-separated: 2, 3, 4
#               (default "4 3 2")
#   DEFAULT_BATCHES  the defaults step's batch sizes for them, comma-separated (default
#               1,8,22,64,1024)
#   UNROLLS     the unrolled step's key forms, space-separated: 2 (pairs), 3 (threes)
#               (default "2 3")
#   COMPARE_ITEM_SECONDS  the compare step's --max-seconds-per-item (default 20)
#   SANITIZE_TOOLS  compute-sanitizer tools of the sanitize step, in order (default
#               "memcheck racecheck synccheck"; racecheck takes about 80 s on an H100)
#   DEADLINE    seconds since the epoch (date +%s) by which every command must end: each
#               runs for at most the time left less 20 s, and a command with under 50 s
#               left before the DEADLINE is skipped and named in the log (a short lease: the
#               steps first named get the time, the rest are skipped, never cut off with
#               their logs unwritten)
#   GPU_RUN_EMULATED=1  a dry run without a GPU, on the CUDA emulator (gpu/emu): the steps use
#               the *_emulated programs of an existing build (BUILD_DIR, default build), with
#               toy parameters and small sizes; test runs tests_gpu_emulated; slow, stage,
#               sanitize, stalls, hotspots, profile and variants need a GPU and are skipped.
#               It checks the script, the programs' reports and the summary before device
#               time is spent (ctest gpu_run_emulated).
#   GPU_RUN_FAKE_TOOLS=1  with GPU_RUN_EMULATED=1: the sanitize and hotspots steps run too,
#               with the compute-sanitizer and ncu found on PATH, which the tests make
#               stand-ins (tests/apps/fake_tools: they check the options and list the test
#               cases or run the program), on the emulated programs; hotspots at batch 2
#               unless HOTSPOT_BATCH is set (ctest gpu_call_emulated)
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  usage
  exit 2
fi
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1" || exit 2
out="$(cd "$1" && pwd)"
shift
steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(env build host test apps slow bench shapes circuits sanitize profile stalls)
for s in "${steps[@]}"; do
  case "$s" in
    env|build|host|test|apps|slow|bench|shapes|circuits|sanitize|profile|quick|stalls) ;;
    hotspots|variants|unrolled|bundle|lanes|defaults|stage|compare) ;;
    *) echo "gpu_run: unknown step '$s'" >&2; usage; exit 2;;
  esac
done
cd "$repo_root"
emulated="${GPU_RUN_EMULATED:-0}"
if [[ "$emulated" != 0 && "$emulated" != 1 ]]; then
  echo "gpu_run: GPU_RUN_EMULATED='$emulated'; expected 1 (a dry run on the CUDA emulator) or 0" >&2
  exit 2
fi
fake_tools="${GPU_RUN_FAKE_TOOLS:-0}"
if [[ "$fake_tools" != 0 && ("$fake_tools" != 1 || "$emulated" != 1) ]]; then
  echo "gpu_run: GPU_RUN_FAKE_TOOLS='$fake_tools'; expected 0, or 1 with GPU_RUN_EMULATED=1" >&2
  exit 2
fi
jobs="${JOBS:-$(nproc)}"
arch="${CUDA_ARCH:-native}"
step_timeout="${STEP_TIMEOUT:-540}"
deadline="${DEADLINE:-0}"
if ! [[ "$deadline" =~ ^[0-9]+$ ]]; then
  echo "gpu_run: DEADLINE='$deadline'; expected seconds since the epoch (date +%s)" >&2
  exit 2
fi
failed=()
skipped=()
# What the steps run: the issues' sizes on a GPU, or a dry run's on the emulator.
if [[ "$emulated" == 1 ]]; then
  build="${BUILD_DIR:-build}"
  exe=_emulated                 # the programs built against the CUDA emulator
  reps="${BENCH_REPS:-1}"
  params=toy_INSECURE           # in place of tfhe_lib_128
  other_params=(toy_k2_INSECURE)  # in place of tfhe_lib_80 and default_128
  batches=1,16 shape_batches=1,16 small_batches=1,8 other_batches=1,8 transfer_batches=1,16
  unrolled_1x1_batches=1,16 unrolled_lane_batches=16 lane_batches=16 default_batches=1,16
  # GxR: groups 1, k+1, (k+1)l = 4 for toy x rotations per block; cC: clusters; lP: lanes
  shapes=(1x1 2x1 4x1 1x2 1x4 c2 c4 l2)
  budget_run=(--memory-budget-mb 1 --batch 512)  # chunked on both engines
  circuit_widths=8 circuit_lanes=4 circuit_reps=1
  regression_args=(--dataset 6x2) cli_args=(--insecure-ok)
else
  build="${BUILD_DIR:-build-gpu-run}"
  exe=""
  reps="${BENCH_REPS:-5}"
  params=tfhe_lib_128
  other_params=(tfhe_lib_80 default_128)
  batches=1,64,1024,16384,65536 shape_batches=1,64,1024,16384 small_batches=1,64,1024
  other_batches=1,1024,16384 transfer_batches=1024,16384,65536
  unrolled_1x1_batches=1,16384 unrolled_lane_batches=16384,65536 lane_batches=16384,65536
  default_batches=1,8,22,64,1024
  # GxR: groups 1, k+1, (k+1)l = 6 for tfhe_lib_128 x rotations per block; cC: clusters;
  # wC: wide clusters (4 points per thread); cCe, wCe: every block sums its column; lP: P
  # rotations per thread
  shapes=(1x1 l2 2x1 6x1 1x2 1x4 c2 c6 c6e w6 w6e)
  budget_run=(--memory-budget-mb 256 --batch 16384)
  circuit_widths=8,16,32 circuit_lanes=64 circuit_reps="$reps"
  regression_args=() cli_args=()
fi
# Refuses (exit 2) an environment variable's value that does not match a pattern.
require_match() {  # name, value, pattern, what is expected
  [[ "$2" =~ $3 ]] && return 0
  echo "gpu_run: $1='$2'; expected $4" >&2
  exit 2
}
batch_list='^[1-9][0-9]*(,[1-9][0-9]*)*$'
shape_batches="${SHAPE_BATCHES:-$shape_batches}"
require_match SHAPE_BATCHES "$shape_batches" "$batch_list" "batch sizes such as 1,64,1024"
lane_batches="${LANE_BATCHES:-$lane_batches}"
require_match LANE_BATCHES "$lane_batches" "$batch_list" "batch sizes such as 16384,65536"
stage_batches="${STAGE_BATCHES:-16384,65536}"
require_match STAGE_BATCHES "$stage_batches" "$batch_list" "batch sizes such as 16384,65536"
if [[ -n "${SHAPES:-}" ]]; then read -ra shapes <<< "$SHAPES"; fi
read -ra hotspot_shapes <<< "${HOTSPOT_SHAPES-1x1}"
hotspot_batch=16384
[[ "$emulated" == 1 ]] && hotspot_batch=2
hotspot_batch="${HOTSPOT_BATCH:-$hotspot_batch}"
read -ra variant_args <<< "${VARIANT_ARGS:-}"
read -ra extra_shape_args <<< "${SHAPE_ARGS:-}"
unrolls="${UNROLLS:-2 3}"
default_batches="${DEFAULT_BATCHES:-$default_batches}"
default_unrolls="${DEFAULT_UNROLLS:-4 3 2}"
require_match DEFAULT_UNROLLS "$default_unrolls" '^[234]( [234])*$' \
  'unrolled key forms 2, 3 and/or 4, such as "4 3"'
require_match DEFAULT_BATCHES "$default_batches" "$batch_list" "batch sizes such as 1,8,22"
bundle_batches="${BUNDLE_BATCHES:-1,8,22}"
bundle_unrolls="${BUNDLE_UNROLLS:-2 3 4}"
require_match BUNDLE_UNROLLS "$bundle_unrolls" '^[234]( [234])*$' \
  'unrolled key forms 2, 3 and/or 4, such as "3 4"'
require_match BUNDLE_BATCHES "$bundle_batches" "$batch_list" "batch sizes such as 1,8,22"
require_match UNROLLS "$unrolls" '^[23]( [23])*$' 'unrolled key forms 2 and/or 3, such as "2 3"'
require_match HOTSPOT_BATCH "$hotspot_batch" '^[1-9][0-9]*$' "one batch size such as 1 or 16384"
compare_item_seconds="${COMPARE_ITEM_SECONDS:-20}"
require_match COMPARE_ITEM_SECONDS "$compare_item_seconds" '^[1-9][0-9]{0,5}$' \
  "seconds per item such as 20"
# Nsight Compute's filter for the fused rotation kernels (fused_kernels.cu).
rotation_kernels='fused_(blind|fixed|lane|cluster|staged)_(rotation|lane)'

log() { echo "[gpu_run $(date -u +%H:%M:%S)] $*" | tee -a "$out/gpu_run.log"; }

# `OPTION VALUE` unless the extra arguments after `--` give OPTION themselves: the programs
# refuse an option given twice, so VARIANT_ARGS="--reps 7" or SHAPE_ARGS="--batch 1" replace
# a step's own --reps or --batch instead of repeating it.
#   args+=($(unless_given --reps 3 -- "${variant_args[@]}"))
unless_given() {  # option, value, --, extra arguments...
  local option="$1" value="$2" a
  shift 3
  for a in "$@"; do [[ "$a" == "$option" ]] && return 0; done
  echo "$option" "$value"
}

# Runs a command with the step time limit (and the DEADLINE's), output to a log file (and its
# tail to stdout).
run_logged() {  # log_name, command...
  local name="$1" limit="$step_timeout"
  shift
  if [[ "$deadline" != 0 ]]; then
    local left=$((deadline - $(date +%s) - 20))
    if [[ $left -lt 30 ]]; then
      log "$name: skipped: ${left}s left before the DEADLINE"
      skipped+=("$name")
      return 0
    fi
    [[ $left -lt $limit ]] && limit=$left
  fi
  log "$name: $*"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  if [[ $rc -ne 0 ]]; then
    log "$name: FAILED (exit $rc$([[ $rc -eq 124 ]] && echo ", timed out after ${limit}s"))"
    failed+=("$name")
  else
    log "$name: ok"
  fi
  return $rc
}

# Libraries from .deb files when the machine lacks them (no internet, no apt there).
have_deps() {
  command -v pkg-config >/dev/null && pkg-config --exists fftw3 libsodium &&
    { [[ -f /usr/include/catch2/catch.hpp ]] || [[ -f /usr/local/include/catch2/catch.hpp ]]; } &&
    { [[ -f /usr/include/CLI/CLI.hpp ]] || [[ -f /usr/local/include/CLI/CLI.hpp ]]; }
}
setup_deps() {
  have_deps && return 0
  local debs="${DEPS_DIR:-$repo_root/.deps}"
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    log "deps: FFTW, libsodium, Catch2, CLI11 or pkg-config missing and no .deb files in $debs"
    log "deps: run scripts/gpu_deps.sh on a Debian 12 machine and carry .deps"
    return 1
  fi
  local root="${DEPS_ROOT:-/opt/deps}"
  if ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then root="$repo_root/.deps/root"; fi
  mkdir -p "$root"
  if [[ ! -f "$root/.torusgate_unpacked" ]]; then
    for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root" || return 1; done
    # The packages' pkg-config files name /usr: point them at the unpacked tree.
    find "$root" -name '*.pc' -exec sed -i "s|=/usr|=$root/usr|g" {} +
    touch "$root/.torusgate_unpacked"
    log "deps: unpacked $(ls "$debs"/*.deb | wc -l) packages from $debs into $root"
  fi
  local multiarch
  multiarch="$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
  export PATH="$root/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$root/usr/lib/$multiarch:$root/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$root/usr/lib/$multiarch/pkgconfig:$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$root/usr/include${CPATH:+:$CPATH}"
  # pkgconf's binary is pkgconf; pkg-config is a link in the pkgconf package.
  [[ -x "$root/usr/bin/pkg-config" ]] || ln -sf "$root/usr/bin/pkgconf" "$root/usr/bin/pkg-config"
  pkg-config --exists fftw3 libsodium
}

nvcc_path() {
  if command -v nvcc >/dev/null; then command -v nvcc
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then echo /usr/local/cuda/bin/nvcc
  fi
}

step_env() {
  {
    [[ "$emulated" == 1 ]] && echo "mode: dry run on the CUDA emulator (GPU_RUN_EMULATED=1), no GPU"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short=12 HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo -dirty)"
    echo "host: $(uname -a)"
    echo "cores: $(nproc)"
    echo "--- nvidia-smi"
    timeout 60 nvidia-smi 2>&1 || echo "nvidia-smi failed (or took over 60 s)"
    echo "--- nvcc"
    "$(nvcc_path)" --version 2>&1 || echo "no nvcc"
    echo "--- cmake"
    cmake --version 2>&1 | head -1
    echo "--- g++"
    g++ --version 2>&1 | head -1
    echo "--- python3 (the summary)"
    python3 --version 2>&1 || echo "no python3"
  } > "$out/environment.txt"
  log "env: written to environment.txt"
  grep -E "NVIDIA-SMI|H100|H200|A100|MiB" "$out/environment.txt" | head -5
}

step_build() {
  if [[ "$emulated" == 1 ]]; then
    [[ -f "$build/CMakeCache.txt" ]] ||
      run_logged configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release || return 1
    run_logged build cmake --build "$build" -j "$jobs" --target tests_gpu_emulated tests_gpu_host \
      bench_gates_emulated bench_circuits_emulated linear_regression_emulated gate_demo_emulated \
      circuit_demo_emulated torusgate_emulated
    return
  fi
  if ! setup_deps; then
    failed+=(deps)
    return 1
  fi
  local nvcc
  nvcc="$(nvcc_path)"
  if [[ -z "$nvcc" ]]; then
    log "build: no nvcc on PATH or at /usr/local/cuda/bin"
    failed+=(build)
    return 1
  fi
  # native needs a GPU at configure time; fall back to Hopper (sm_90) where none is seen.
  if [[ "$arch" == native ]] && ! nvidia-smi -L >/dev/null 2>&1; then arch=90; fi
  run_logged configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch" -DTORUSGATE_ENABLE_CUDA=ON ||
    return 1
  if ! grep -q "torusgate: CUDA backend ON" "$out/configure.log"; then
    log "build: CMake did not enable the CUDA backend (see configure.log)"
    failed+=(cuda-not-enabled)
    return 1
  fi
  run_logged build cmake --build "$build" -j "$jobs" --target tests_gpu tests_gpu_host bench_gates \
    bench_circuits linear_regression gate_demo circuit_demo torusgate
}

# A step that needs a real GPU, in a dry run: said and skipped.
needs_gpu() {  # step
  [[ "$emulated" == 1 ]] || return 1
  if [[ "$fake_tools" == 1 && ("$1" == sanitize || "$1" == hotspots) ]]; then
    log "$1: with stand-in tools (GPU_RUN_FAKE_TOOLS=1): its commands run, nothing is measured"
    return 1
  fi
  log "$1: needs a GPU: skipped in the emulated dry run"
}

# True when the program exists; else says so and marks the step failed.
require_built() {  # step, program
  [[ -x "$2" ]] && return 0
  log "$1: $2 not built (run the build step)"
  failed+=("$1")
  return 1
}

# A Catch2 executable with its console log (durations of every test case).
run_catch() {  # name, executable, test spec
  local name="$1" exe="$2" spec="$3"
  require_built "$name" "$exe" || return 1
  # Exit 77 would mean "no CUDA device: skipped": a failure on the GPU machine.
  run_logged "$name" "$exe" "$spec" --durations yes --order rand --rng-seed time
}

step_host() { run_catch tests_gpu_host "$build/tests/gpu/tests_gpu_host" "~[slow]"; }
step_test() { run_catch tests_gpu "$build/tests/gpu/tests_gpu$exe" "~[slow]"; }
step_slow() {
  needs_gpu slow && return 0
  run_catch tests_gpu_slow "$build/tests/gpu/tests_gpu" "[slow]"
}

# The programs on the GPU as a user runs them: the README's main job with each engine (its
# exit status says whether every encrypted result was exact), the demos, and the CLI's
# client/server round trip with eval on the GPU.
step_apps() {
  local apps="$build/apps"
  require_built apps "$apps/linear_regression$exe" && require_built apps "$apps/cli/torusgate$exe" ||
    return 1
  for engine in cufft fused; do
    run_logged "linear_regression_gpu_$engine" "$apps/linear_regression$exe" --backend gpu \
      --params "$params" "${regression_args[@]}" --gpu-engine "$engine" --no-progress \
      --json "$out/linear_regression_gpu_$engine.json"
  done
  run_logged gate_demo_gpu "$apps/gate_demo$exe" --backend gpu --params "$params"
  run_logged circuit_demo_gpu "$apps/circuit_demo$exe" --backend gpu --params "$params" \
    --gpu-engine fused --key-switching tensor_core
  local keys="$out/cli" tg="$apps/cli/torusgate$exe"
  mkdir -p "$keys"
  run_logged cli_gpu bash -c "set -e
    '$tg' keygen --params '$params' ${cli_args[*]} --secret-key '$keys/s.tgsk' --cloud-key '$keys/c.tgck' --force
    '$tg' encrypt --key '$keys/s.tgsk' --width 8 --signed --values '1,-2;3,4' -o '$keys/a.tgct' --force
    '$tg' encrypt --key '$keys/s.tgsk' --width 8 --signed --values '5,6;-7,8' -o '$keys/b.tgct' --force
    '$tg' eval --cloud-key '$keys/c.tgck' --op matmul --width 16 --backend gpu '$keys/a.tgct' '$keys/b.tgct' -o '$keys/ab.tgct' --force
    '$tg' decrypt --key '$keys/s.tgsk' '$keys/ab.tgct' | tee '$keys/ab.txt'
    printf ' 19 -10\\n-13  50\\n' | diff - '$keys/ab.txt'"
  rm -f "$keys"/*.tgsk "$keys"/*.tgck  # keys are not results
}

step_bench() {
  local bench="$build/apps/bench_gates$exe"
  require_built bench "$bench" || return 1
  # The issue's batch sizes on tfhe_lib_128, both engines and both key switchings in one
  # run; latency is batch 1.
  run_logged "bench_gates_gpu_$params" "$bench" --backend gpu --params "$params" \
    --gpu-engine cufft,fused --key-switching gather,tensor_core \
    --batch "$batches" --reps "$reps" --json "$out/bench_gates_gpu_$params.json"
  # The cuFFT engine with pinned transfers (page-locked staging buffers) at the sizes where
  # transfers weigh; the direct ones are the first run's cuFFT/gather results.
  run_logged "bench_gates_gpu_${params}_pinned" "$bench" --backend gpu --params "$params" \
    --gpu-engine cufft --key-switching gather --transfer pinned --batch "$transfer_batches" --reps 3 \
    --json "$out/bench_gates_gpu_${params}_pinned.json"
  # The cuFFT engine without CUDA graphs (launch overhead), small batches only.
  run_logged "bench_gates_gpu_${params}_nographs" "$bench" --backend gpu --params "$params" \
    --gpu-engine cufft --key-switching gather --no-cuda-graphs --batch "$small_batches" --reps "$reps" \
    --json "$out/bench_gates_gpu_${params}_nographs.json"
  # The other real sets, and chunking forced by a small budget.
  for other in "${other_params[@]}"; do
    run_logged "bench_gates_gpu_$other" "$bench" --backend gpu --params "$other" \
      --batch "$other_batches" --reps 3 --json "$out/bench_gates_gpu_$other.json"
  done
  run_logged "bench_gates_gpu_${params}_budget" "$bench" --backend gpu --params "$params" \
    "${budget_run[@]}" --reps 3 --json "$out/bench_gates_gpu_${params}_budget.json"
}

# The bench_gates options that force a shape named GxR, cC, wC, cCe, wCe or lP (into the array
# shape_args); GxRs and lPs: the same with the key rows through the TMA's stage
# (--fused-key-stage 2, docs/gpu.md section 6.34; 1x1s and l2s).
set_shape_args() {
  if [[ "$1" =~ ^([0-9]+x[0-9]+|l[0-9]+)s$ ]]; then
    set_shape_args "${BASH_REMATCH[1]}"
    shape_args+=(--fused-key-stage 2)
    return
  fi
  case "$1" in
    c*e) shape_args=(--fused-cluster "${1:1:-1}" --fused-cluster-sums 2) ;;
    w*e) shape_args=(--fused-cluster "${1:1:-1}" --fused-cluster-points 4 --fused-cluster-sums 2) ;;
    c*) shape_args=(--fused-cluster "${1#c}" --fused-cluster-sums 1) ;;
    w*) shape_args=(--fused-cluster "${1#w}" --fused-cluster-points 4 --fused-cluster-sums 1) ;;
    l*) shape_args=(--fused-lanes "${1#l}" --fused-cluster 1) ;;
    *) shape_args=(--fused-groups "${1%x*}" --fused-rotations "${1#*x}" --fused-cluster 1) ;;
  esac
}

# The fused engine's launch shapes (GxR: groups per rotation x rotations per block, cC: a
# thread block cluster of C blocks per rotation, lP: P rotations per thread), each forced
# (all 0, the default, choose per batch size): the data to tune choose_shape with.
step_shapes() {
  local bench="$build/apps/bench_gates$exe"
  require_built shapes "$bench" || return 1
  local shape_args
  for shape in "${shapes[@]}"; do
    set_shape_args "$shape"
    # shellcheck disable=SC2046 # unless_given: words
    run_logged "bench_gates_gpu_${params}_fused_$shape" "$bench" --backend gpu \
      --params "$params" --gpu-engine fused "${shape_args[@]}" "${extra_shape_args[@]}" \
      $(unless_given --batch "$shape_batches" -- "${extra_shape_args[@]}") \
      $(unless_given --reps 3 -- "${extra_shape_args[@]}") \
      --json "$out/bench_gates_gpu_${params}_fused_$shape.json"
  done
}

# The circuits of DESIGN.md section 11 on the GPU, each engine (the fused one with tensor-core
# key switching): the default adder, less and the default wrapping multiplier, one element
# (latency: the 32-bit add and multiply targets) and several at once (throughput), each run's
# uploads and download timed apart (the transfer share target); and the cuFFT engine's
# several-element run again with pinned transfers.
step_circuits() {
  local bench="$build/apps/bench_circuits$exe"
  require_built circuits "$bench" || return 1
  local engine ks_args
  # The fused engine first (the default, and DESIGN.md's targets), with keys in threes right
  # after its one-element run: under a DEADLINE the cuFFT baseline is what gets skipped.
  for engine in fused cufft; do
    ks_args=(--key-switching gather)  # the cuFFT engine's; the fused engine's automatic one
    [[ "$engine" == fused ]] && ks_args=()
    run_logged "bench_circuits_gpu_${params}_$engine" "$bench" --backend gpu --params "$params" \
      --gpu-engine "$engine" "${ks_args[@]}" --widths "$circuit_widths" \
      --reps "$circuit_reps" --json "$out/bench_circuits_gpu_${params}_$engine.json"
    if [[ "$engine" == fused ]]; then
      # The widest operations on one element with keys in threes, the fused engine's
      # small-batch key (docs/gpu.md section 6.31); each row states the noise model's chance
      # of a wrong bit per run, which threes raise for the adders' weighted gates
      # (docs/security.md section 3).
      run_logged "bench_circuits_gpu_${params}_fused_unroll3" "$bench" --backend gpu \
        --params "$params" --gpu-engine fused --unroll 3 --widths "${circuit_widths##*,}" \
        --reps "$circuit_reps" --json "$out/bench_circuits_gpu_${params}_fused_unroll3.json"
    fi
    run_logged "bench_circuits_gpu_${params}_${engine}_lanes$circuit_lanes" "$bench" --backend gpu \
      --params "$params" --gpu-engine "$engine" "${ks_args[@]}" \
      --widths "${circuit_widths##*,}" --lanes "$circuit_lanes" --reps 3 \
      --json "$out/bench_circuits_gpu_${params}_${engine}_lanes$circuit_lanes.json"
  done
  run_logged "bench_circuits_gpu_${params}_cufft_lanes${circuit_lanes}_pinned" "$bench" \
    --backend gpu --params "$params" --gpu-engine cufft --key-switching gather \
    --transfer pinned --widths "${circuit_widths##*,}" --lanes "$circuit_lanes" --reps 3 \
    --json "$out/bench_circuits_gpu_${params}_cufft_lanes${circuit_lanes}_pinned.json"
}

# The comparison runs with the gpu backend: compare_backends resumes a copy of the committed
# results (the CPU backends' on the CI machine class), so its results hold both and
# scripts/plot_compare.py draws them together; an item whose estimate is past
# COMPARE_ITEM_SECONDS is skipped (its record says so). Cut off at the DEADLINE, the items
# measured so far are in results.jsonl. The emulated run: --quick on the toy set.
step_compare() {
  local tool="$build/apps/compare/compare_backends$exe" dir="$out/compare"
  require_built compare "$tool" || return 1
  local args=(--backends gpu --no-progress --out "$dir")
  if [[ "$emulated" == 1 ]]; then
    args+=(--quick --params "$params" --overwrite)
  else
    mkdir -p "$dir" && cp docs/results/comparison/results.jsonl "$dir/" || {
      log "compare: docs/results/comparison/results.jsonl could not be copied"
      failed+=(compare)
      return 1
    }
    args+=(--resume --params tfhe_lib_80,tfhe_lib_128 --max-seconds-per-item
           "$compare_item_seconds")
  fi
  run_logged compare_gpu "$tool" "${args[@]}"
}

# Every report's tables and the issues' and DESIGN.md's targets, docs-ready.
# Without python3 on the GPU machine the reports are all there: summarize them where it is.
summarize() {
  if ! command -v python3 >/dev/null; then
    log "summary: no python3 on this machine: run scripts/gpu_summary.py on OUT_DIR elsewhere"
    return 0
  fi
  run_logged summary python3 "$repo_root/scripts/gpu_summary.py" "$out" --out "$out/summary.md"
}

tool_path() {  # name: on PATH or in the CUDA toolkit next to nvcc
  if command -v "$1" >/dev/null; then command -v "$1"; return; fi
  local nvcc
  nvcc="$(nvcc_path)"
  [[ -n "$nvcc" && -x "$(dirname "$nvcc")/$1" ]] && echo "$(dirname "$nvcc")/$1"
}

step_sanitize() {
  needs_gpu sanitize && return 0
  local tests="$build/tests/gpu/tests_gpu$exe" sanitizer
  sanitizer="$(tool_path compute-sanitizer)"
  if [[ -z "$sanitizer" ]]; then
    log "sanitize: no compute-sanitizer on PATH or next to nvcc"
    failed+=(sanitize)
    return 1
  fi
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    run_logged "sanitize_$tool" "$sanitizer" --tool "$tool" --error-exitcode 3 "$tests" "[sanitize]"
  done
}

# Sets the caller's `ncu` to Nsight Compute; false (the step skipped, said in the log) where
# it is neither on PATH nor next to nvcc.
find_ncu() {  # step
  ncu="$(tool_path ncu)"
  [[ -n "$ncu" ]] && return 0
  log "$1: no ncu (Nsight Compute) on PATH or next to nvcc: skipped"
  return 1
}

# The numbers a change to the fused engine or key switching moves, in about a minute.
step_quick() {
  local bench="$build/apps/bench_gates$exe"
  require_built quick "$bench" || return 1
  run_logged "bench_gates_gpu_${params}_quick" "$bench" --backend gpu --params "$params" \
    --gpu-engine fused --key-switching gather,tensor_core --batch "$batches" --reps 3 \
    --json "$out/bench_gates_gpu_${params}_quick.json"
  run_logged "bench_gates_gpu_${params}_quick_cufft" "$bench" --backend gpu --params "$params" \
    --gpu-engine cufft --key-switching gather --batch "$small_batches" --reps 3 \
    --json "$out/bench_gates_gpu_${params}_quick_cufft.json"
}

# Unrolled keys (docs/gpu.md sections 6.9, 6.19 and 6.27) against the standard one, on the
# same machine, for each form of UNROLLS (2: pairs, files *_unrolled*; 3: threes,
# *_unrolled3*): the fused engine's automatic shapes, 1x1 at batches 1 and 16,384, two lanes
# at large batches (*_l2), the cuFFT engine.
step_unrolled() {
  local bench="$build/apps/bench_gates$exe"
  require_built unrolled "$bench" || return 1
  local u tag
  for u in $unrolls; do
    tag=unrolled
    [[ "$u" == 2 ]] || tag="unrolled$u"
    run_logged "bench_gates_gpu_${params}_${tag}" "$bench" --backend gpu --params "$params" \
      --unroll "$u" --gpu-engine fused --key-switching gather,tensor_core --batch "$batches" \
      --reps 3 --json "$out/bench_gates_gpu_${params}_${tag}.json"
    run_logged "bench_gates_gpu_${params}_${tag}_1x1" "$bench" --backend gpu --params "$params" \
      --unroll "$u" --gpu-engine fused --fused-groups 1 --fused-rotations 1 --fused-cluster 1 \
      --batch "$unrolled_1x1_batches" --reps 3 \
      --json "$out/bench_gates_gpu_${params}_${tag}_1x1.json"
    run_logged "bench_gates_gpu_${params}_${tag}_l2" "$bench" --backend gpu --params "$params" \
      --unroll "$u" --gpu-engine fused --fused-lanes 2 --fused-cluster 1 \
      --batch "$unrolled_lane_batches" --reps 3 \
      --json "$out/bench_gates_gpu_${params}_${tag}_l2.json"
    run_logged "bench_gates_gpu_${params}_${tag}_cufft" "$bench" --backend gpu --params "$params" \
      --unroll "$u" --gpu-engine cufft --key-switching gather --batch "$small_batches" --reps 3 \
      --json "$out/bench_gates_gpu_${params}_${tag}_cufft.json"
  done
  step_quick
}

# Large batches on two lanes (docs/gpu.md sections 6.27 and 6.38), one short call: the standard
# key's automatic shape (files *_lanes1; l2 at these batches), keys in pairs and threes forced
# onto two lanes (*_lanes2, *_lanes3) and onto 1x1 (*_lanes2_1x1, *_lanes3_1x1), the
# tensor-core key switching, at LANE_BATCHES.
step_lanes() {
  local bench="$build/apps/bench_gates$exe"
  require_built lanes "$bench" || return 1
  local u
  local common=(--backend gpu --params "$params" --gpu-engine fused --key-switching tensor_core
                --batch "$lane_batches" --reps 3)
  run_logged "bench_gates_gpu_${params}_lanes1" "$bench" "${common[@]}" \
    --json "$out/bench_gates_gpu_${params}_lanes1.json"
  for u in 2 3; do
    run_logged "bench_gates_gpu_${params}_lanes$u" "$bench" "${common[@]}" --unroll "$u" \
      --fused-lanes 2 --fused-cluster 1 --json "$out/bench_gates_gpu_${params}_lanes$u.json"
  done
  for u in 2 3; do
    run_logged "bench_gates_gpu_${params}_lanes${u}_1x1" "$bench" "${common[@]}" --unroll "$u" \
      --fused-groups 1 --fused-rotations 1 --fused-cluster 1 \
      --json "$out/bench_gates_gpu_${params}_lanes${u}_1x1.json"
  done
}

# The key stage (docs/gpu.md section 6.34): the standard key's large batches with each row's key
# through the TMA's stage (--fused-key-stage 2, *_on) and without (1, *_off), on the automatic
# shape (two lanes, *_l2) and on one lane (--fused-lanes 1: 1x1, *_1x1), off and on one after
# the other, in two rounds (*_1, *_2), so that a drift of the machine shows.
step_stage() {
  needs_gpu stage && return 0
  local bench="$build/apps/bench_gates$exe"
  require_built stage "$bench" || return 1
  local round shape mode name
  local -A shape_flags=([l2]="" [1x1]="--fused-lanes 1") stage_flags=([off]=1 [on]=2)
  for round in 1 2; do
    for shape in l2 1x1; do
      for mode in off on; do
        name="bench_gates_gpu_${params}_stage_${shape}_${mode}_$round"
        # shellcheck disable=SC2086 # shape_flags: words
        run_logged "$name" "$bench" --backend gpu --params "$params" --gpu-engine fused \
          --key-switching tensor_core ${shape_flags[$shape]} \
          --fused-key-stage "${stage_flags[$mode]}" --batch "$stage_batches" --reps "$reps" \
          --json "$out/$name.json"
      done
    done
  done
}

# Bundled keys (docs/gpu.md sections 6.25, 6.26): for each form of BUNDLE_UNROLLS, the fused
# engine's automatic shapes (a cluster per rotation at these batches) without bundled keys
# (--fused-bundle 1, files *_bundleU_off; not for fours, which run on bundled keys only), with
# them made before the rotation (2, *_bundleU_on) and made while it runs (2 with
# --fused-bundle-overlap 2, *_bundleU_overlap), one after the other on the same machine.
step_bundle() {
  local bench="$build/apps/bench_gates$exe"
  require_built bundle "$bench" || return 1
  local u mode name modes
  local -A flags=([off]="--fused-bundle 1" [on]="--fused-bundle 2"
                  [overlap]="--fused-bundle 2 --fused-bundle-overlap 2")
  for u in $bundle_unrolls; do
    modes="off on overlap"
    [[ "$u" == 4 ]] && modes="on overlap"
    for mode in $modes; do
      name="bench_gates_gpu_${params}_bundle${u}_$mode"
      # shellcheck disable=SC2086 # flags: words
      run_logged "$name" "$bench" --backend gpu --params "$params" --unroll "$u" \
        --gpu-engine fused ${flags[$mode]} --batch "$bundle_batches" --reps "$reps" \
        --json "$out/$name.json"
    done
  done
}

# What a user gets (docs/gpu.md section 6.31's run_defaults.sh as a step): the fused engine
# with every option automatic (shape, bundling, key switching), per key form: each of
# DEFAULT_UNROLLS at DEFAULT_BATCHES, the standard key at the issue's batch sizes after the
# first of them, so that a short lease measures both of issue 5's targets first.
step_defaults() {
  local bench="$build/apps/bench_gates$exe"
  require_built defaults "$bench" || return 1
  local u first=1
  for u in $default_unrolls; do
    run_logged "bench_gates_gpu_${params}_defaults_u$u" "$bench" --backend gpu --params "$params" \
      --unroll "$u" --gpu-engine fused --batch "$default_batches" --reps "$reps" \
      --json "$out/bench_gates_gpu_${params}_defaults_u$u.json"
    if [[ $first == 1 ]]; then
      first=0
      run_logged "bench_gates_gpu_${params}_defaults" "$bench" --backend gpu --params "$params" \
        --gpu-engine fused --batch "$batches" --reps "$reps" \
        --json "$out/bench_gates_gpu_${params}_defaults.json"
    fi
  done
}

# What the rotation kernels' warps wait for (Nsight Compute's warp state statistics: long
# scoreboard = device memory, short scoreboard = shared memory, barrier, ...).
step_stalls() {
  needs_gpu stalls && return 0
  local bench="$build/apps/bench_gates" ncu
  find_ncu stalls || return 0
  local batch
  for batch in 1 16384; do
    run_logged "stalls_fused_$batch" "$ncu" --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section LaunchStats --kernel-name "regex:$rotation_kernels" \
      --launch-count 1 "$bench" --backend gpu --params tfhe_lib_128 --gpu-engine fused \
      --batch "$batch" --reps 1 --warmup 0
  done
}

# Where the rotation kernel's time goes, instruction by instruction: Nsight Compute's
# source counters (warp stall samples per SASS instruction) as CSV, with the instruction
# statistics, memory and compute workload sections.
step_hotspots() {
  needs_gpu hotspots && return 0
  local bench="$build/apps/bench_gates$exe" ncu shape name shape_args
  require_built hotspots "$bench" || return 1
  find_ncu hotspots || return 0
  for shape in auto "${hotspot_shapes[@]}"; do
    name="hotspots_$hotspot_batch"
    shape_args=()
    if [[ "$shape" != auto ]]; then
      name="hotspots_${hotspot_batch}_$shape"
      set_shape_args "$shape"
    fi
    run_logged "$name" "$ncu" --section SourceCounters --section WarpStateStats \
      --section InstructionStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section Occupancy --kernel-name "regex:$rotation_kernels" \
      --launch-count 1 --export "$out/$name" --force-overwrite \
      "$bench" --backend gpu --params tfhe_lib_128 --gpu-engine fused "${shape_args[@]}" \
      "${extra_shape_args[@]}" \
      $(unless_given --batch "$hotspot_batch" -- "${extra_shape_args[@]}") \
      $(unless_given --reps 1 -- "${extra_shape_args[@]}") \
      $(unless_given --warmup 0 -- "${extra_shape_args[@]}") || continue
    run_logged "${name}_details" "$ncu" --import "$out/$name.ncu-rep" --page details
    run_logged "${name}_sass" "$ncu" --import "$out/$name.ncu-rep" --page source --csv \
      --print-source sass
    mv "$out/${name}_sass.log" "$out/${name}_sass.csv"
  done
}

# A/B of builds that differ at compile time (scripts/gpu_variant.sh: a register cap, say),
# each variant's bench_gates on the same machine, the same batches.
step_variants() {
  needs_gpu variants && return 0
  local dir="${VARIANTS_DIR:-$repo_root/.gpuvar}" v name
  # gpu_pack.sh leaves out `now`'s bench_gates, the prebuilt one: put back from the build.
  if [[ -f "$dir/now/variant.txt" && ! -e "$dir/now/bench_gates" && -x "$build/apps/bench_gates" ]]; then
    cp "$build/apps/bench_gates" "$dir/now/bench_gates"
  fi
  if ! ls "$dir"/*/bench_gates > /dev/null 2>&1; then
    log "variants: no variant builds in $dir (scripts/gpu_variant.sh makes them): skipped"
    return 0
  fi
  for v in "$dir"/*/bench_gates; do
    [[ -x "$v" ]] || continue
    name="$(basename "$(dirname "$v")")"
    # shellcheck disable=SC2046 # unless_given: words
    run_logged "bench_gates_gpu_variant_$name" "$v" --backend gpu --params tfhe_lib_128 \
      --gpu-engine fused $(unless_given --batch 1,16384 -- "${variant_args[@]}") \
      $(unless_given --reps 3 -- "${variant_args[@]}") "${variant_args[@]}" \
      --json "$out/bench_gates_gpu_variant_$name.json"
  done
}

step_profile() {
  needs_gpu profile && return 0
  local bench="$build/apps/bench_gates" ncu
  find_ncu profile || return 0
  local metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
  metrics+=,sm__sass_thread_inst_executed_op_dfma_pred_on.sum
  metrics+=,sm__sass_thread_inst_executed_op_dadd_pred_on.sum
  metrics+=,sm__sass_thread_inst_executed_op_dmul_pred_on.sum
  metrics+=,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active
  metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
  # The rotation kernel in blocks (fused_blind_rotation_kernel) or in clusters
  # (fused_cluster_rotation_kernel, which the automatic shape takes for batch 1 on 9.0);
  # batch 1 also in blocks of 6 groups, for the comparison.
  for batch in 1 1024 16384; do
    run_logged "profile_fused_$batch" "$ncu" --metrics "$metrics" \
      --kernel-name "regex:$rotation_kernels" --launch-count 1 \
      "$bench" --backend gpu --params tfhe_lib_128 --gpu-engine fused --batch "$batch" \
      --reps 1 --warmup 0
  done
  run_logged profile_fused_1_6x1 "$ncu" --metrics "$metrics" \
    --kernel-name "regex:$rotation_kernels" --launch-count 1 \
    "$bench" --backend gpu --params tfhe_lib_128 --gpu-engine fused --fused-groups 6 \
    --fused-rotations 1 --fused-cluster 1 --batch 1 --reps 1 --warmup 0
  run_logged profile_key_switching "$ncu" --metrics "$metrics" \
    --kernel-name regex:key_switch --launch-count 2 \
    "$bench" --backend gpu --params tfhe_lib_128 --gpu-engine fused \
    --key-switching gather,tensor_core --batch 16384 --reps 1 --warmup 0
}

log "gpu_run: steps ${steps[*]}; output in $out; build directory $build"
# Libraries unpacked by an earlier call are found again (the tests and benchmark need them too).
setup_deps >/dev/null 2>&1 || true
# The CUDA runtime and cuFFT of this machine's toolkit, for programs built on another machine
# (scripts/gpu_prebuilt.sh), whose run path names that machine's toolkit.
if [[ "$emulated" == 0 && -n "$(nvcc_path)" ]]; then
  cuda_root="$(cd "$(dirname "$(nvcc_path)")/.." && pwd)"
  export LD_LIBRARY_PATH="$cuda_root/lib64:$cuda_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
summary_due=0
for s in "${steps[@]}"; do
  "step_$s"
  [[ "$s" == bench || "$s" == shapes || "$s" == circuits || "$s" == quick || "$s" == unrolled ||
     "$s" == bundle || "$s" == lanes || "$s" == variants || "$s" == defaults || "$s" == stage ]] &&
    summary_due=1
done
[[ $summary_due == 1 ]] && summarize
[[ ${#skipped[@]} -gt 0 ]] && log "gpu_run: skipped at the DEADLINE: ${skipped[*]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  log "gpu_run: FAILED steps: ${failed[*]}"
  exit 1
fi
log "gpu_run: every step passed"
