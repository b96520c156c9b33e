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
if [[ "${REQUIRE_GPU:-0}" == 1 ]]; then
  grep -q "gpu vs sequential" "$out/speedups.md" || fail "speedups.md does not compare the gpu"
fi
echo "compare_quick: ok ($results results, plots by $python)"
