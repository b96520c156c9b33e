#!/usr/bin/env bash
# scripts/gpu_prepare.sh refuses a malformed variant, the reserved name `now`, a name given
# twice or a revision that is no commit, with exit 2 and a message, before it builds or
# downloads anything (so this runs on any machine, without nvcc or apt); and
# scripts/gpu_pack.sh (beside it) refuses a program that .gpubin lacks, before it writes.
#   run_gpu_prepare_args.sh SCRIPT
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
expect 0 "scripts/gpu_prepare.sh [VARIANT...]" --help
expect 2 "'plain' is not NAME=FLAGS or NAME@REV" plain
expect 2 "'a b=-DX' is not NAME=FLAGS or NAME@REV" "a b=-DX"
expect 2 "'x=' is not NAME=FLAGS or NAME@REV" "x="
expect 2 "'=-DX' is not NAME=FLAGS or NAME@REV" "=-DX"
expect 2 "'now' is the prebuilt bench_gates' variant" now=-DX
expect 2 "'now' is the prebuilt bench_gates' variant" now@HEAD
expect 2 "the variant name 'a' is given twice" a=-DX a@HEAD
expect 2 "no-such-revision-x is not a commit of this repository" a=-DX b@no-such-revision-x
program="$(dirname "$1")/gpu_pack.sh"
expect 2 ".gpubin/apps/no_such_program is not there (scripts/gpu_prebuilt.sh builds it)" \
  apps/no_such_program
finish "gpu_prepare.sh and gpu_pack.sh"
