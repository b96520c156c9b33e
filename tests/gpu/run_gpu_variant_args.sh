#!/usr/bin/env bash
# scripts/gpu_variant.sh refuses a missing or bad variant name, or a bad --at revision, with
# exit 2 and a message, before it configures anything (so this runs on any machine, without
# nvcc).
#   run_gpu_variant_args.sh SCRIPT
set -uo pipefail
script="$1"
fail() { echo "FAIL: $*"; exit 1; }
refuses() {  # expected message, arguments...
  local want="$1" out rc
  shift
  out="$("$script" "$@" 2>&1)"
  rc=$?
  [[ $rc -eq 2 ]] || fail "'$*' exited $rc, not 2: $out"
  [[ "$out" == *"$want"* ]] || fail "'$*' said '$out', not '$want'"
}
refuses "scripts/gpu_variant.sh NAME [--at REV] [CMAKE_ARGUMENT...]"
refuses "scripts/gpu_variant.sh NAME [--at REV] [CMAKE_ARGUMENT...]" -DTORUSGATE_FUSED_MAX_REGISTERS=144
refuses "the name 'a b' must be letters, digits, '.', '_' or '-'" "a b"
refuses "the name '../x' must be letters, digits, '.', '_' or '-'" ../x
refuses "--at needs a revision (a commit, tag or branch)" base --at
refuses "--at needs a revision (a commit, tag or branch)" base --at -DX=1
refuses "--at no-such-revision-x: not a commit of this repository" base --at no-such-revision-x
echo "gpu_variant.sh: every bad name and revision refused"
