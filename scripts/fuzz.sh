#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang into build-fuzz/ and runs each for a given
# time on its seed corpus (fuzz/corpus/<harness>) plus a working corpus outside git
# (build-fuzz/corpus/<harness>, where new inputs go), after replaying the saved inputs of
# fixed findings (fuzz/regressions/<harness>/: each must now pass). Prints executions, corpus
# size and findings per harness and exits 1 when any harness found something; crashing inputs
# stay in build-fuzz/findings/<harness>/. Inputs of findings not fixed yet wait in
# fuzz/regressions/open/<harness>/: they are counted, not replayed.
#
#   scripts/fuzz.sh [--seconds S] [--jobs J] [harness...]   S seconds each (default 60),
#                                                           J harnesses at once (default 1)
#   scripts/fuzz.sh --smoke                                 5 seconds each (CI; --seconds
#                                                           S sets another time)
#   scripts/fuzz.sh --list                                  the harness names
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_RSS_LIMIT_MB (default 2048) and
# FUZZ_MALLOC_LIMIT_MB (default 32: inputs are a few KB, so one allocation that large means a
# reader sized a buffer from a header before the data was there), FUZZ_TIMEOUT (seconds per
# input, default 10), all whole numbers (0: libFuzzer's no limit), and JOBS_BUILD (parallel
# build jobs, default: the number of cores). Needs clang and libclang-rt-14-dev
# (scripts/setup.sh installs them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
RSS_LIMIT_MB="${FUZZ_RSS_LIMIT_MB:-2048}"
MALLOC_LIMIT_MB="${FUZZ_MALLOC_LIMIT_MB:-32}"
TIMEOUT="${FUZZ_TIMEOUT:-10}"

usage() {
  sed -n '2,/^[^#]/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

all_harnesses() {
  grep -l 'LLVMFuzzerTestOneInput' "$ROOT"/fuzz/*.cpp | xargs -n1 basename | sed 's/\.cpp$//' | sort
}

# The dictionary of a harness's format.
dictionary_of() {
  case "$1" in
    native_*) echo "$ROOT/fuzz/dict/native.dict" ;;
    tfhe_lib_*) echo "$ROOT/fuzz/dict/tfhe_lib.dict" ;;
    regression_csv) echo "$ROOT/fuzz/dict/csv.dict" ;;
    cli_values) echo "$ROOT/fuzz/dict/values.dict" ;;
    cli_info) echo "$ROOT/fuzz/dict/tfhe_lib.dict" ;;
    compare_results) echo "$ROOT/fuzz/dict/jsonl.dict" ;;
    host_text|host_cgroup) echo "$ROOT/fuzz/dict/host.dict" ;;
    noise_study_options) echo "$ROOT/fuzz/dict/noise_study.dict" ;;
    command_line) echo "$ROOT/fuzz/dict/command_line.dict" ;;
  esac
}

seconds=""
jobs=1
smoke=0
harnesses=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]{0,8}$ ]] ||
        { echo "fuzz.sh: --seconds needs a whole number >= 1" >&2; exit 2; }
      seconds="$2"; shift 2 ;;
    --jobs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]{0,8}$ ]] ||
        { echo "fuzz.sh: --jobs needs a whole number >= 1" >&2; exit 2; }
      jobs="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --list) all_harnesses; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
# --seconds wins over --smoke's 5, in either order.
if [[ -z "$seconds" ]]; then
  if ((smoke)); then seconds=5; else seconds=60; fi
fi
for setting in FUZZ_RSS_LIMIT_MB FUZZ_MALLOC_LIMIT_MB FUZZ_TIMEOUT JOBS_BUILD; do
  value="${!setting:-}"
  [[ -z "$value" || "$value" =~ ^[0-9]{1,9}$ ]] ||
    { echo "fuzz.sh: $setting='$value' is not a whole number (see --help)" >&2; exit 2; }
done
[[ "${JOBS_BUILD:-1}" =~ [1-9] ]] || { echo "fuzz.sh: JOBS_BUILD needs at least 1" >&2; exit 2; }
known="$(all_harnesses)"
if [[ ${#harnesses[@]} -eq 0 ]]; then
  mapfile -t harnesses <<<"$known"
fi
for h in "${harnesses[@]}"; do
  grep -qx "$h" <<<"$known" ||
    { echo "fuzz.sh: no harness '$h'; known: ${known//$'\n'/ }" >&2; exit 2; }
done

for tool in clang clang++ cmake ninja; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (run scripts/setup.sh)" >&2; exit 1; }
done

# Build (configured once; clang, independent of the main gcc build).
if [[ ! -f "$BUILD/build.ninja" ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S "$ROOT/fuzz" -B "$BUILD" -G Ninja "${launcher[@]}" >/dev/null
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
echo "fuzz: building ${#targets[@]} harnesses in $BUILD"
# A failed build stops here: the harnesses of an earlier build would otherwise run stale.
if ! cmake --build "$BUILD" -j "${JOBS_BUILD:-$(nproc)}" --target "${targets[@]}" \
       >"$BUILD/build.log" 2>&1; then
  grep -v '^\[' "$BUILD/build.log" >&2 || true
  echo "fuzz.sh: the build of the harnesses failed (log: $BUILD/build.log)" >&2
  exit 1
fi
grep -v '^\[' "$BUILD/build.log" || true
for h in "${harnesses[@]}"; do
  [[ -x "$BUILD/fuzz_$h" ]] || { echo "fuzz.sh: the build did not produce $BUILD/fuzz_$h" >&2; exit 1; }
done

mkdir -p "$BUILD/logs" "$BUILD/results"
# Runs one harness; writes a result line "harness seconds execs corpus_files new findings".
run_harness() {
  local h="$1"
  local bin="$BUILD/fuzz_$h"
  local work="$BUILD/corpus/$h" found="$BUILD/findings/$h" log="$BUILD/logs/$h.log"
  local seeds="$ROOT/fuzz/corpus/$h" regressions="$ROOT/fuzz/regressions/$h"
  mkdir -p "$work" "$found"
  local findings=0
  # Saved inputs of past findings must now pass.
  if [[ -d "$regressions" ]] && compgen -G "$regressions/*" >/dev/null; then
    if ! "$bin" -rss_limit_mb="$RSS_LIMIT_MB" -malloc_limit_mb="$MALLOC_LIMIT_MB" \
         -timeout="$TIMEOUT" "$regressions"/* >"$BUILD/logs/$h.regressions.log" 2>&1; then
      findings=$((findings + 1))
      echo "fuzz: $h: a saved regression input fails again (log: $BUILD/logs/$h.regressions.log)" >&2
    fi
  fi
  local args=(-max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb="$RSS_LIMIT_MB"
              -malloc_limit_mb="$MALLOC_LIMIT_MB" -timeout="$TIMEOUT" -use_value_profile=1
              -artifact_prefix="$found/")
  local dict
  dict="$(dictionary_of "$h")"
  [[ -n "$dict" && -f "$dict" ]] && args+=(-dict="$dict")
  local started=$SECONDS rc=0
  nice "$bin" "${args[@]}" "$work" "$seeds" >"$log" 2>&1 || rc=$?
  local elapsed=$((SECONDS - started))
  local execs new
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  new="$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -n 1)"
  local artifacts
  artifacts="$(find "$found" -type f | wc -l)"
  if [[ $rc -ne 0 || $artifacts -gt 0 ]]; then
    findings=$((findings + (artifacts > 0 ? artifacts : 1)))
    echo "fuzz: $h: FINDING (exit $rc); inputs in $found/, log $log" >&2
    grep -E 'ERROR: |FUZZ FINDING|SUMMARY: |runtime error' "$log" | head -n 5 >&2 || true
  fi
  # Keep the working corpus small: merge it (and the seeds) into a minimal set.
  if [[ $smoke -eq 0 && $rc -eq 0 ]]; then
    local merged="$work.merged"
    rm -rf "$merged" && mkdir -p "$merged"
    if "$bin" -merge=1 -rss_limit_mb="$RSS_LIMIT_MB" -malloc_limit_mb="$MALLOC_LIMIT_MB" \
         -timeout="$TIMEOUT" "$merged" "$work" "$seeds" >"$BUILD/logs/$h.merge.log" 2>&1; then
      rm -rf "$work" && mv "$merged" "$work"
    else
      rm -rf "$merged"
    fi
  fi
  local files
  files="$(find "$work" -type f | wc -l)"
  local open=0
  [[ -d "$ROOT/fuzz/regressions/open/$h" ]] && open="$(find "$ROOT/fuzz/regressions/open/$h" -type f | wc -l)"
  echo "$h $elapsed ${execs:-0} $files ${new:-0} $findings $open" >"$BUILD/results/$h"
}

echo "fuzz: ${#harnesses[@]} harnesses, $seconds s each, $jobs at once; logs in $BUILD/logs"
for h in "${harnesses[@]}"; do rm -f "$BUILD/results/$h"; done
for h in "${harnesses[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  run_harness "$h" &
done
wait

status=0
total_execs=0
total_seconds=0
printf '%-24s %8s %12s %10s %8s %6s %9s %5s\n' harness seconds execs exec/s corpus new findings open
for h in "${harnesses[@]}"; do
  if [[ ! -f "$BUILD/results/$h" ]]; then
    printf '%-24s %s\n' "$h" "no result (see $BUILD/logs/$h.log)"
    status=1
    continue
  fi
  read -r name elapsed execs files new findings open <"$BUILD/results/$h"
  rate=$(( elapsed > 0 ? execs / elapsed : execs ))
  printf '%-24s %8s %12s %10s %8s %6s %9s %5s\n' "$name" "$elapsed" "$execs" "$rate" "$files" "$new" "$findings" "$open"
  total_execs=$((total_execs + execs))
  total_seconds=$((total_seconds + elapsed))
  [[ $findings -eq 0 ]] || status=1
done
printf '%-24s %8s %12s\n' total "$total_seconds" "$total_execs"
echo "fuzz: 'open' counts the saved inputs of known findings not fixed yet (fuzz/regressions/open/)"
if [[ $status -ne 0 ]]; then
  echo "fuzz: FINDINGS: see the messages above; crashing inputs are in $BUILD/findings/" >&2
  echo "fuzz: reproduce one with: $BUILD/fuzz_<harness> <input file>" >&2
else
  echo "fuzz: no findings"
fi
exit "$status"
