#!/usr/bin/env bash
# Runs the CPU circuit benchmark of docs/results/ again on this machine and rewrites its JSON,
# docs/results/circuits_cpu_tfhe_lib_128.json: the default adder (add.sklansky), less and the
# default wrapping multiplier (mul.wrapping.dadda) at 8, 16 and 32 bits on the OpenMP backend
# with tfhe_lib_128, 3 timed runs each after 1 warmup. A minute or two on 2 cores. Run it on a
# quiet machine. It builds first with scripts/setup.sh (incremental; SKIP_SETUP=1 skips that
# and uses the binary in $BUILD_DIR as it is).
#
# Environment: BUILD_DIR (default build), OUT_DIR (default docs/results; a relative one is
# taken from the folder the script is run in), and for smoke runs BACKEND, PARAMS, OPS,
# WIDTHS, REPS, LANES; the JSON is named circuits_cpu_$PARAMS.json (circuits_cpu_$BACKEND_$PARAMS
# for the sequential backend, circuits_gpu_$PARAMS and circuits_plaintext for the others).
# It takes no arguments. For example, a quick check in seconds:
#   PARAMS=toy_INSECURE WIDTHS=8 REPS=1 OUT_DIR=/tmp scripts/bench_circuits.sh
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
takes_no_arguments "$@"
out="$(from_caller "${OUT_DIR:-}")"
out="${out:-docs/results}"
backend="${BACKEND:-openmp}"
params="${PARAMS:-tfhe_lib_128}"
ops="${OPS:-add.sklansky,less,mul.wrapping.dadda}"
widths="${WIDTHS:-8,16,32}"
reps="${REPS:-3}"
lanes="${LANES:-1}"
# The settings' forms, checked before the build (the program's own checks name its flags).
refuse() {
  echo "bench_circuits.sh: $*" >&2
  exit 2
}
for setting in "REPS=$reps" "LANES=$lanes"; do
  [[ "${setting#*=}" =~ ^[1-9][0-9]{0,8}$ ]] ||
    refuse "${setting%%=*}='${setting#*=}' is not a whole number >= 1"
done
[[ "$widths" =~ ^[0-9]+(,[0-9]+)*$ ]] || refuse "WIDTHS='$widths' is not a list such as 8,16,32"
[[ "$backend" =~ ^(openmp|sequential|gpu|plaintext|best)$ ]] ||
  refuse "BACKEND='$backend'; expected openmp, sequential, gpu, plaintext or best"

bench="$(built_binary apps/bench_circuits)"
mkdir -p "$out"

case "$backend" in
  openmp) name="circuits_cpu_${params}" ;;
  gpu) name="circuits_gpu_${params}" ;;
  plaintext) name="circuits_plaintext" ;;
  *) name="circuits_cpu_${backend}_${params}" ;;
esac
echo "== $name"
"$bench" --backend "$backend" --params "$params" --ops "$ops" --widths "$widths" \
  --reps "$reps" --warmup 1 --lanes "$lanes" --json "$out/$name.json"
