#!/usr/bin/env bash
# Everything a short GPU lease needs, made here in one command, so that its device time goes
# to measuring: the Debian packages the GPU machine lacks (scripts/gpu_deps.sh), the programs
# built for it (scripts/gpu_prebuilt.sh, from BUILD_DIR), the variant builds named below
# (scripts/gpu_variant.sh; .gpuvar is made anew) with the prebuilt bench_gates as variant
# `now`, all packed into .deps/gpupack.tar.gz (scripts/gpu_pack.sh). Carry .deps and run on
# the GPU machine:
#   tar xzf .deps/gpupack.tar.gz && BUILD_DIR=.gpubin scripts/gpu_run.sh OUT STEP...
#   scripts/gpu_prepare.sh [VARIANT...]
# VARIANT: NAME=FLAGS (the working tree with CUDA flags FLAGS, space-separated, e.g.
# factorkey=-DTORUSGATE_FUSED_FACTOR_KEY) or NAME@REV (the sources of commit REV, no flags).
# Environment: BUILD_DIR (default build; configured with the CUDA backend, as
# scripts/setup.sh does where nvcc exists), PROGRAMS (what gpu_pack.sh packs from .gpubin,
# space-separated; default its own).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  usage
  exit 0
fi
# Every variant checked before anything is built, and kept as its scripts/gpu_variant.sh
# arguments: the name and what follows it.
variant_names=()
variant_args=()
for v in "$@"; do
  if [[ "$v" =~ ^([A-Za-z0-9_.-]+)=(.+)$ ]]; then
    name="${BASH_REMATCH[1]}"
    variant_args+=("-DCMAKE_CUDA_FLAGS=${BASH_REMATCH[2]}")
  elif [[ "$v" =~ ^([A-Za-z0-9_.-]+)@([^[:space:]]+)$ ]]; then
    name="${BASH_REMATCH[1]}"
    if ! git -C "$repo_root" rev-parse --verify --quiet "${BASH_REMATCH[2]}^{commit}" > /dev/null; then
      echo "gpu_prepare: '$v': ${BASH_REMATCH[2]} is not a commit of this repository" >&2
      exit 2
    fi
    variant_args+=("--at ${BASH_REMATCH[2]}")
  else
    echo "gpu_prepare: '$v' is not NAME=FLAGS or NAME@REV (NAME: letters, digits, '.', '_' or '-')" >&2
    exit 2
  fi
  if [[ "$name" == now ]]; then
    echo "gpu_prepare: 'now' is the prebuilt bench_gates' variant; name yours otherwise" >&2
    exit 2
  fi
  for other in ${variant_names[@]+"${variant_names[@]}"}; do
    if [[ "$other" == "$name" ]]; then
      echo "gpu_prepare: the variant name '$name' is given twice" >&2
      exit 2
    fi
  done
  variant_names+=("$name")
done

cd "$repo_root"
scripts/gpu_deps.sh > /dev/null
scripts/gpu_prebuilt.sh "${BUILD_DIR:-$repo_root/build}"
rm -rf .gpuvar
for i in "${!variant_names[@]}"; do
  case "${variant_args[i]}" in
    "--at "*) scripts/gpu_variant.sh "${variant_names[i]}" --at "${variant_args[i]#--at }" ;;
    *) scripts/gpu_variant.sh "${variant_names[i]}" "${variant_args[i]}" ;;
  esac
done
if [[ $# -gt 0 ]]; then
  mkdir -p .gpuvar/now
  cp .gpubin/apps/bench_gates .gpuvar/now/bench_gates
  echo "commit $(git rev-parse HEAD) (.gpubin, scripts/gpu_prebuilt.sh); no CMake arguments" \
    > .gpuvar/now/variant.txt
fi
read -ra programs <<< "${PROGRAMS:-}"
scripts/gpu_pack.sh ${programs[@]+"${programs[@]}"}
