#!/usr/bin/env bash
# README command 1: set up (packages + build, see setup.sh), then run the main job.
# Until the linear-regression example exists, the main job is the two demos: the gate demo
# (every gate kind in one batch) and the encrypted integer demo (sums, products,
# comparisons, a dot and a matrix product in one scheduled run). In both the client makes
# keys and encrypts, the server computes with the cloud key only, the client decrypts and
# checks. Extra arguments go to both demos, e.g.
#   scripts/quickstart.sh --params toy_INSECURE --backend sequential
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${BUILD_DIR:-build}"

scripts/setup.sh
echo
echo "quickstart: running $build_dir/apps/gate_demo $*"
"$build_dir/apps/gate_demo" "$@"
echo
echo "quickstart: running $build_dir/apps/circuit_demo $*"
exec "$build_dir/apps/circuit_demo" "$@"
