#!/usr/bin/env bash
# The next GPU call of docs/gpu.md (section 6.37) as one command for the device tool, carrying
# .deps (the .deb files of scripts/gpu_deps.sh and the programs that scripts/gpu_prepare.sh
# packed into .deps/gpupack.tar.gz), with timeout_s 600:
#   scripts/gpu_call.sh "$OUT"
# It unpacks the programs into .gpubin when they are not there, then runs scripts/gpu_run.sh
# stage after stage under one DEADLINE (BUDGET seconds after its start), and after each stage
# packs everything measured so far into $OUT/results.tgz (replaced whole, never half
# written), so that a call cut short still brings back what it measured. Nsight Compute's
# reports (*.ncu-rep) go apart into $OUT/ncu.tgz: the tool brings back files of at most
# 16 MiB. Last, where time is left, the main job on the GPU (linear_regression, fused engine,
# at most 60 s). The exit status is 1 if a stage or the main job failed, 2 on bad settings.
# Environment:
#   STAGES      the stages, separated by |, each a list of gpu_run.sh steps (default
#               "env test defaults|stage sanitize|hotspots circuits compare": the comparison
#               runs' gpu rows last, where time is left)
#   BUDGET      seconds from the start by which every step must end (default 540: the tool's
#               600 s less the packing and the main job)
#   STEP_TIMEOUT  each command's limit in seconds (default 240)
#   HOTSPOT_SHAPES  the hotspots step's shapes beside the automatic one (default l2s)
#   WORK        where the results are written before packing (default /tmp/gpu_call; cleared
#               first, so that a second call on a warm machine packs only its own results)
#   DEPS_ROOT   where gpu_run.sh unpacks the .deb files (default /opt/deps)
#   GPU_RUN_EMULATED=1 and BUILD_DIR  a dry run without a GPU on the CUDA emulator, with a
#               build's *_emulated programs (BUILD_DIR, default build): what gpu_run.sh skips
#               there (tests_gpu's GPU cases, sanitize, hotspots, stage) is skipped here too
#               (ctest gpu_call_emulated)
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
  "")
    usage >&2
    exit 2
    ;;
esac
start=$(date +%s)
budget="${BUDGET:-540}"
if ! [[ "$budget" =~ ^[1-9][0-9]*$ ]]; then
  echo "gpu_call: BUDGET='$budget'; expected seconds, such as 540" >&2
  exit 2
fi
deadline=$((start + budget))
mkdir -p "$1" || exit 2
out="$(cd "$1" && pwd)"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
work="${WORK:-/tmp/gpu_call}"
rm -rf "$work" && mkdir -p "$work" || exit 2
work="$(cd "$work" && pwd)"

# The main job's limit: a minute on a GPU; on the emulator of a busy host its toy run has taken
# over a minute, so there the BUDGET alone limits it.
if [[ "${GPU_RUN_EMULATED:-0}" == 1 ]]; then
  build="${BUILD_DIR:-build}" exe=_emulated params=toy_INSECURE regression_args=(--dataset 6x2)
  main_limit=$budget
else
  build="${BUILD_DIR:-.gpubin}" exe="" params=tfhe_lib_128 regression_args=() main_limit=60
  if [[ ! -x "$build/apps/bench_gates" && -f .deps/gpupack.tar.gz ]]; then
    tar xzf .deps/gpupack.tar.gz || echo "gpu_call: unpacking .deps/gpupack.tar.gz failed" >&2
  fi
fi
deps="${DEPS_ROOT:-/opt/deps}"
libs="$deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The programs the steps run: each one missing, or a library it lacks, named in
# WORK/programs.txt (and on stderr) after the first stage, when gpu_run.sh has unpacked the
# .deb files, instead of only when its own step starts.
check_programs() {
  local program path lacking
  for program in tests/gpu/tests_gpu apps/bench_gates apps/bench_circuits apps/linear_regression \
    apps/compare/compare_backends; do
    path="$build/$program$exe"
    if [[ ! -x "$path" ]]; then
      echo "missing: $path (scripts/gpu_prepare.sh packs it; PROGRAMS names it)"
    elif lacking="$(ldd "$path" 2>&1 | grep "not found")"; then
      echo "lacks libraries: $path: $(echo "$lacking" | tr -s ' \t\n' ' ')"
    else
      echo "ok: $path"
    fi
  done > "$work/programs.txt"
  grep -v "^ok: " "$work/programs.txt" >&2
}

# Everything in WORK into OUT/results.tgz, the Nsight Compute reports into OUT/ncu.tgz; each
# written beside and moved into place.
pack() {
  tar czf "$out/results.tgz.part" --exclude='*.ncu-rep' -C "$work" . &&
    mv "$out/results.tgz.part" "$out/results.tgz"
  local reports=()
  mapfile -t reports < <(cd "$work" && ls -- *.ncu-rep 2>/dev/null)
  if ((${#reports[@]} > 0)); then
    tar czf "$out/ncu.tgz.part" -C "$work" -- "${reports[@]}" &&
      mv "$out/ncu.tgz.part" "$out/ncu.tgz"
  fi
}

status=0
IFS='|' read -ra stages <<< "${STAGES:-env test defaults|stage sanitize|hotspots circuits compare}"
for stage in "${stages[@]}"; do
  read -ra steps <<< "$stage"
  ((${#steps[@]} == 0)) && continue
  DEADLINE="$deadline" BUILD_DIR="$build" STEP_TIMEOUT="${STEP_TIMEOUT:-240}" \
    HOTSPOT_SHAPES="${HOTSPOT_SHAPES-l2s}" DEPS_ROOT="$deps" \
    scripts/gpu_run.sh "$work" "${steps[@]}" || status=1
  [[ -f "$work/programs.txt" ]] || check_programs
  pack
done

# The main job, where a minute is left before the packing's own margin.
program="$build/apps/linear_regression$exe"
if ((deadline - $(date +%s) > 70)) && [[ -x "$program" ]]; then
  timeout "$main_limit" "$program" --backend gpu --params "$params" --gpu-engine fused \
    --no-progress "${regression_args[@]}" --json "$work/linear_regression_gpu_fused.json" \
    > "$work/linear_regression.log" 2>&1 || status=1
else
  echo "gpu_call: the main job skipped ($program missing or under 70 s left)" |
    tee -a "$work/gpu_run.log"
fi
pack
echo "gpu_call: $(($(date +%s) - start)) s; results in $out/results.tgz" \
  "$([[ -f "$out/ncu.tgz" ]] && echo "and ncu.tgz")"
exit "$status"
