#!/usr/bin/env bash
# scripts/fused_fft_sass.sh refuses bad arguments with exit 2 and a message naming them,
# before it looks for nvcc or cuobjdump (so this runs on any machine).
#   run_fused_fft_sass_args.sh SCRIPT
set -uo pipefail
script="$1"
fail() { echo "FAIL: $*"; exit 1; }
refuses() {  # expected message, arguments...
  local want="$1" out rc
  shift
  out="$("$script" "$@" 2>&1)"
  rc=$?
  [[ $rc -eq 2 ]] || fail "$* exited $rc, not 2: $out"
  [[ "$out" == *"$want"* ]] || fail "$* said '$out', not '$want'"
}
refuses "unknown argument '--bogus'" --bogus
refuses "--arch 'foo' is not like sm_90" --arch foo
refuses "--arch needs a value" --arch
refuses "--against needs a git revision" --against
refuses "--json needs a file name" --json
"$script" --help | grep -q "fused_fft_probe.cu" || fail "--help does not describe the script"
echo "fused_fft_sass.sh: every bad argument refused"
