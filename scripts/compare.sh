#!/usr/bin/env bash
# The comparison runs in one command (docs/comparison.md): builds with scripts/setup.sh
# (incremental), runs build/apps/compare/compare_backends, then draws the plots and speedup
# tables with scripts/plot_compare.py. Arguments go to compare_backends; --help prints this and
# the program's options (when it is built) and builds nothing.
#
#   scripts/compare.sh                    # full run: sequential, openmp, gpu; tfhe_lib_80 and
#                                         # tfhe_lib_128; into docs/results/comparison
#   scripts/compare.sh --backends openmp --params tfhe_lib_80 --workloads addition,multiplication
#   scripts/compare.sh --quick --params toy_INSECURE --out /tmp/compare   # smoke test, seconds
#   scripts/compare.sh --plan             # exact costs and estimated times, runs nothing
#
# It resumes: unless --overwrite is given, a folder that already holds results is continued
# (--resume), so running the same command again after an interruption finishes the work.
# Items whose estimated run time exceeds MAX_ITEM_SECONDS are skipped (and recorded as
# skipped with their estimate) unless --max-seconds-per-item is given.
#
# Environment: BUILD_DIR (default build), SKIP_SETUP=1 (use the binary as it is), OUT (default
# docs/results/comparison), MAX_ITEM_SECONDS (default 1800; 0: no limit), PYTHON (an
# interpreter with matplotlib; default: python3, or /usr/bin/python3 when only it has it).
# A relative --out or OUT is taken from the folder the script is run in; the default from the
# repository. Exit status: the program's (0; 1: a result decrypted wrong; 2: an error, and
# then nothing is drawn), or 2 when the plots fail.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
budget="${MAX_ITEM_SECONDS:-1800}"
if [[ ! "$budget" =~ ^[0-9]{1,9}$ ]]; then
  echo "compare.sh: MAX_ITEM_SECONDS='$budget' is not a whole number of seconds (0: no limit)" >&2
  exit 2
fi
budget=$((10#$budget))
out=docs/results/comparison
[[ -n "${OUT:-}" ]] && out="$(from_caller "$OUT")"

# The arguments, with the value of --out made absolute (the program runs in the repository).
args=()
out_given=0
while (($#)); do
  if [[ "$1" == --out ]]; then
    if (($# < 2)) || [[ "$2" == --* ]]; then
      echo "compare.sh: --out needs a folder (see --help)" >&2
      exit 2
    fi
    out="$(from_caller "$2")"
    out_given=1
    args+=(--out "$out")
    shift 2
  else
    args+=("$1")
    shift
  fi
done
has() {
  local a
  for a in "${args[@]}"; do [[ "$a" == "$1" ]] && return 0; done
  return 1
}

# Help builds nothing: this header, then the program's options when it is built.
if has --help || has -h; then
  print_header
  if [[ -x "$BUILD_DIR/apps/compare/compare_backends" ]]; then
    echo
    exec "$BUILD_DIR/apps/compare/compare_backends" --help
  fi
  echo "(compare_backends is not built yet; its options are in docs/comparison.md)"
  exit 0
fi
bin="$(built_binary apps/compare/compare_backends)"
budget_args=()
if ! has --max-seconds-per-item && [[ "$budget" != 0 ]]; then
  budget_args=(--max-seconds-per-item "$budget")
fi
if has --plan; then
  exec "$bin" "${args[@]}" "${budget_args[@]}"
fi

extra=("${budget_args[@]}")
((out_given)) || extra+=(--out "$out")
if ! has --overwrite && ! has --resume && [[ -s "$out/results.jsonl" ]]; then
  echo "compare.sh: $out already holds results: continuing them (--resume; --overwrite starts again)"
  extra+=(--resume)
fi

status=0
"$bin" "${args[@]}" "${extra[@]}" || status=$?
if ((status == 2)); then
  echo "compare.sh: compare_backends failed (exit 2); nothing drawn" >&2
  exit 2
fi
if [[ ! -s "$out/results.csv" ]]; then
  echo "compare.sh: no results in $out to plot" >&2
  exit 2
fi

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  python=python3
  if ! python3 -c "import matplotlib" 2> /dev/null && [[ -x /usr/bin/python3 ]] &&
     /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
    python=/usr/bin/python3
  fi
fi
"$python" scripts/plot_compare.py "$out" || exit 2
exit "$status"
