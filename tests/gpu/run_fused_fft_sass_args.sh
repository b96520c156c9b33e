#!/usr/bin/env bash
# scripts/fused_fft_sass.sh refuses bad arguments with exit 2 and a message naming them,
# before it looks for nvcc or cuobjdump (so this runs on any machine).
#   run_fused_fft_sass_args.sh SCRIPT
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
expect 2 "unknown argument '--bogus'" --bogus
expect 2 "--arch 'foo' is not like sm_90" --arch foo
expect 2 "--arch needs a value" --arch
expect 2 "--against needs a git revision" --against
expect 2 "--json needs a file name" --json
expect 0 "fused_fft_probe.cu" --help
finish fused_fft_sass.sh
