#!/usr/bin/env bash
# scripts/gpu_variant.sh refuses a missing or bad variant name with exit 2 and a message,
# before it configures anything (so this runs on any machine, without nvcc).
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
refuses "scripts/gpu_variant.sh NAME [CMAKE_ARGUMENT...]"
refuses "scripts/gpu_variant.sh NAME [CMAKE_ARGUMENT...]" -DTORUSGATE_FUSED_MAX_REGISTERS=144
refuses "the name 'a b' must be letters, digits, '.', '_' or '-'" "a b"
refuses "the name '../x' must be letters, digits, '.', '_' or '-'" ../x
echo "gpu_variant.sh: every bad name refused"
