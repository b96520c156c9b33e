#!/usr/bin/env bash
# scripts/gpu_variant.sh refuses a missing or bad variant name, or a bad --at revision, with
# exit 2 and a message, before it configures anything (so this runs on any machine, without
# nvcc).
#   run_gpu_variant_args.sh SCRIPT
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
expect 2 "scripts/gpu_variant.sh NAME [--at REV] [CMAKE_ARGUMENT...]"
expect 2 "scripts/gpu_variant.sh NAME [--at REV] [CMAKE_ARGUMENT...]" -DTORUSGATE_FUSED_MAX_REGISTERS=144
expect 2 "the name 'a b' must be letters, digits, '.', '_' or '-'" "a b"
expect 2 "the name '../x' must be letters, digits, '.', '_' or '-'" ../x
expect 2 "--at needs a revision (a commit, tag or branch)" base --at
expect 2 "--at needs a revision (a commit, tag or branch)" base --at -DX=1
expect 2 "--at no-such-revision-x: not a commit of this repository" base --at no-such-revision-x
finish gpu_variant.sh
