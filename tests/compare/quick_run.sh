#!/usr/bin/env bash
# Smoke test of the comparison runs (ctest compare_quick): compare_backends --quick on
# toy_INSECURE with sequential, openmp and gpu (gpu must be reported unavailable, or run when
# a GPU backend exists), a --resume that finds everything measured, then the plot script;
# checks that every output file appears. Exit 77 (ctest: skipped) when no Python interpreter
# here has matplotlib. With REQUIRE_GPU=1 the gpu backend must have run (the CUDA emulator's
# build, compare_backends_emulated), and the plots must compare it with the CPU.
#   [REQUIRE_GPU=1] quick_run.sh COMPARE_BACKENDS PLOT_SCRIPT WORK_DIR
set -euo pipefail
bin="$1" plot="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
out="$work/out"
fail() { echo "compare_quick: FAILED: $*" >&2; exit 1; }

"$bin" --quick --params toy_INSECURE --backends sequential,openmp,gpu --out "$out" \
  --no-progress > "$work/run.log" 2>&1 || { cat "$work/run.log"; fail "compare_backends exited $?"; }
for f in results.jsonl results.json results.csv; do
  [[ -s "$out/$f" ]] || fail "$out/$f is missing or empty"
done
grep -q " ok$" "$work/run.log" || fail "no measured item in the log"
grep -q ", 0 WRONG$" "$work/run.log" || { cat "$work/run.log"; fail "a result decrypted wrong"; }
grep -Eq "^gpu +(UNAVAILABLE, skipped: .+|.*bootstraps/s)" "$work/run.log" || fail "the gpu backend is not reported"
if [[ "${REQUIRE_GPU:-0}" == 1 ]]; then
  grep -Eq "^gpu +.*bootstraps/s" "$work/run.log" || { cat "$work/run.log"; fail "the gpu backend did not run"; }
  grep -q ",gpu,toy_INSECURE," "$out/results.csv" || fail "results.csv has no gpu rows"
fi
results=$(($(wc -l < "$out/results.csv") - 1))
[[ "$results" -ge 50 ]] || fail "only $results result rows in results.csv"

# A GPU option with no gpu backend in the run is refused, naming it.
if "$bin" --quick --params toy_INSECURE --backends sequential --gpu-engine cufft --plan \
  > "$work/refused.log" 2>&1; then
  fail "--gpu-engine without the gpu backend was accepted"
fi
want="--gpu-engine is a GPU option: it applies to the gpu backend, which --backends leaves out"
grep -qF -- "$want" \
  "$work/refused.log" || { cat "$work/refused.log"; fail "the refusal of --gpu-engine"; }

# A second run into the same folder needs --resume, and then measures nothing again.
if "$bin" --quick --params toy_INSECURE --out "$out" > /dev/null 2>&1; then
  fail "a second run without --resume was accepted"
fi
"$bin" --quick --params toy_INSECURE --backends sequential,openmp --out "$out" --resume \
  --no-progress > "$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "--resume exited $?"; }
cpu_results=$(grep -cE ",(sequential|openmp),toy_INSECURE," "$out/results.csv")
grep -q "^0 measured, $cpu_results already measured" "$work/resume.log" ||
  { cat "$work/resume.log"; fail "--resume measured again"; }

# A resume with other backend options (task size) or more runs measures those items again
# instead of taking the old results for its own.
"$bin" --quick --params toy_INSECURE --backends sequential --workloads gate.coalesced \
  --task-size 4 --out "$out" --resume --no-progress > "$work/resume_other.log" 2>&1 ||
  { cat "$work/resume_other.log"; fail "--resume with another task size exited $?"; }
grep -q "^2 measured, 0 already measured" "$work/resume_other.log" &&
  grep -q "^note: 2 results already in .* were measured with another setup" \
    "$work/resume_other.log" ||
  { cat "$work/resume_other.log"; fail "--resume with another task size took the old results"; }
"$bin" --quick --params toy_INSECURE --backends sequential --workloads gate.coalesced \
  --task-size 4 --reps 2 --out "$out" --resume --no-progress > "$work/resume_reps.log" 2>&1 ||
  { cat "$work/resume_reps.log"; fail "--resume with more runs exited $?"; }
grep -q "^2 measured, 0 already measured" "$work/resume_reps.log" ||
  { cat "$work/resume_reps.log"; fail "--resume with more runs took results of fewer"; }

# The results folder as printed, by a run and a resume: a terminal's escape sequence in its
# path stays inert (\x1B).
esc=$'\e[31m'
for resume in "" --resume; do
  "$bin" --quick --params toy_INSECURE --backends sequential --workloads gate.coalesced \
    --out "$work/d$esc" ${resume:+"$resume"} --no-progress > "$work/escaped.log" 2>&1 ||
    { cat "$work/escaped.log"; fail "a run into a folder named with an escape exited $?"; }
  grep -qF "plots:   scripts/plot_compare.py $work/d\x1B[31m" "$work/escaped.log" &&
    ! grep -qF "$esc" "$work/escaped.log" ||
    { cat -v "$work/escaped.log"; fail "the results folder's path reached the terminal raw"; }
done
grep -qF "resuming: 2 results already in $work/d\x1B[31m" "$work/escaped.log" ||
  { cat -v "$work/escaped.log"; fail "the resume does not name the folder escaped"; }

# An option's value is never the next option, and an option is given once; neither run makes
# a folder.
cd "$work"
expect_refused() {
  local want="$1"
  shift
  if "$bin" "$@" > "$work/refused.log" 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$want" "$work/refused.log" || { cat "$work/refused.log"; fail "message of: $*"; }
}
expect_refused "--out needs a value but the next argument is the option '--quick'" \
  --out --quick --params toy_INSECURE --backends sequential
[[ ! -e "$work/--quick" ]] || fail "a folder named --quick was made"
expect_refused "--reps is given twice ('1', then '2'); give it once" \
  --quick --params toy_INSECURE --reps 1 --reps 2 --out "$work/twice"
[[ ! -e "$work/twice" ]] || fail "a refused run made its folder"
cd - > /dev/null

python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" > /dev/null 2>&1 && "$candidate" -c "import matplotlib" 2> /dev/null; then
    python="$candidate"
    break
  fi
done
if [[ -z "$python" ]]; then
  echo "compare_quick: SKIPPED the plots: no Python interpreter with matplotlib" \
       "(apt-get install python3-matplotlib)" >&2
  exit 77
fi
"$python" "$plot" "$out" > "$work/plot.log" 2>&1 || { cat "$work/plot.log"; fail "plot_compare.py exited $?"; }
for group in gates compound addition vector multiplication matrix regression; do
  [[ -s "$out/plot_$group.png" ]] || fail "$out/plot_$group.png is missing"
done
[[ -s "$out/speedups.md" ]] || fail "$out/speedups.md is missing"
grep -q "openmp vs sequential" "$out/speedups.md" || fail "speedups.md has no speedup column"

# A damaged results.csv is refused with a message and exit status 2, not a traceback.
damaged="$work/damaged"
mkdir -p "$damaged"
head -c 700 "$out/results.csv" > "$damaged/results.csv"
status=0
"$python" "$plot" "$damaged" > "$work/damaged.log" 2>&1 || status=$?
[[ $status == 2 ]] && grep -Eq "fields than its header|cannot read" "$work/damaged.log" ||
  { cat "$work/damaged.log"; fail "a cut results.csv: exit $status"; }
cut -d, -f2- "$out/results.csv" > "$damaged/results.csv"
status=0
"$python" "$plot" "$damaged" > "$work/damaged.log" 2>&1 || status=$?
[[ $status == 2 ]] && grep -q "lacks the column group" "$work/damaged.log" ||
  { cat "$work/damaged.log"; fail "a results.csv without its first column: exit $status"; }
# Plots of groups no longer in the results are removed.
cp "$out/plot_gates.png" "$damaged/plot_matrix.png"
grep -E "^(group|gates)," "$out/results.csv" > "$damaged/results.csv"
"$python" "$plot" "$damaged" > "$work/damaged.log" 2>&1 ||
  { cat "$work/damaged.log"; fail "plot_compare.py on the gates rows exited $?"; }
[[ -s "$damaged/plot_gates.png" && ! -e "$damaged/plot_matrix.png" ]] ||
  fail "the stale plot_matrix.png was kept"
if [[ "${REQUIRE_GPU:-0}" == 1 ]]; then
  grep -q "gpu vs sequential" "$out/speedups.md" || fail "speedups.md does not compare the gpu"
fi

# scripts/compare.sh (the build as it is): a relative --out is the caller's, a bad run draws
# nothing and exits 2, --out without a folder is refused.
if [[ "${REQUIRE_GPU:-0}" != 1 ]]; then
  script="$(dirname "$plot")/compare.sh"
  build="$(cd "$(dirname "$bin")/../.." && pwd)"
  mkdir -p "$work/caller"
  cd "$work/caller"
  SKIP_SETUP=1 BUILD_DIR="$build" PYTHON="$python" "$script" --quick --params toy_INSECURE \
    --backends sequential --workloads gate.coalesced --no-progress --out rel \
    > "$work/script.log" 2>&1 || { cat "$work/script.log"; fail "compare.sh exited $?"; }
  [[ -s "$work/caller/rel/results.csv" && -s "$work/caller/rel/plot_gates.png" ]] ||
    { cat "$work/script.log"; fail "compare.sh --out rel did not write into the caller's rel/"; }
  before="$(stat -c %Y "$work/caller/rel/speedups.md")"
  sleep 1
  status=0
  SKIP_SETUP=1 BUILD_DIR="$build" PYTHON="$python" "$script" --quick --params toy_INSECURE \
    --reps 0 --out rel > "$work/script.log" 2>&1 || status=$?
  [[ $status == 2 && "$(stat -c %Y "$work/caller/rel/speedups.md")" == "$before" ]] ||
    { cat "$work/script.log"; fail "compare.sh after a failed run: exit $status, or it drew"; }
  status=0
  SKIP_SETUP=1 BUILD_DIR="$build" "$script" --quick --out > "$work/script.log" 2>&1 || status=$?
  [[ $status == 2 ]] && grep -q "needs a folder" "$work/script.log" ||
    { cat "$work/script.log"; fail "compare.sh with --out last: exit $status"; }
  SKIP_SETUP=1 BUILD_DIR="$build" "$script" --plan --quick --params toy_INSECURE \
    --backends sequential --workloads add.ripple > "$work/script.log" 2>&1 ||
    { cat "$work/script.log"; fail "compare.sh --plan exited $?"; }
  grep -q "budget 30:00 per item" "$work/script.log" ||
    { cat "$work/script.log"; fail "compare.sh --plan without the script's budget"; }
  # --help builds nothing: the script's settings, then the program's options when built;
  # a bad MAX_ITEM_SECONDS is named before any work.
  SKIP_SETUP=1 BUILD_DIR="$work/no-build" "$script" --help > "$work/script.log" 2>&1 &&
    grep -q "MAX_ITEM_SECONDS" "$work/script.log" ||
    { cat "$work/script.log"; fail "compare.sh --help without a build"; }
  status=0
  MAX_ITEM_SECONDS=abc SKIP_SETUP=1 BUILD_DIR="$build" "$script" --plan --quick \
    > "$work/script.log" 2>&1 || status=$?
  [[ $status == 2 ]] && grep -q "MAX_ITEM_SECONDS='abc' is not a whole number" \
    "$work/script.log" || { cat "$work/script.log"; fail "compare.sh, MAX_ITEM_SECONDS=abc"; }
  cd - > /dev/null
fi
# A folder without results.csv: exit status 2, as for a damaged one.
status=0
"$python" "$plot" "$work/no-results" > "$work/missing.log" 2>&1 || status=$?
[[ $status == 2 ]] && grep -q "results.csv not found" "$work/missing.log" ||
  { cat "$work/missing.log"; fail "plot_compare.py without results.csv: exit $status"; }
echo "compare_quick: ok ($results results, plots by $python)"
