#!/usr/bin/env bash
# README command 1: set up (packages + build, see setup.sh), then run the main job: the
# encrypted linear-regression example on the best available backend. The client quantizes
# a small synthetic dataset and encrypts it; the server, holding only the cloud key,
# computes the training aggregates A^T A and A^T y and then the predictions of the fitted
# model; the client decrypts, checks every value against plain integer arithmetic and
# compares the model with a plaintext least-squares fit. About a minute on 2 cores.
# Extra arguments go to linear_regression (--help: this and its options, building nothing), e.g.
#   scripts/quickstart.sh --dataset 200x10 --kind binary
#   scripts/quickstart.sh --csv data.csv --target price --json report.json
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${BUILD_DIR:-build}"

# Help builds nothing: this header, then the program's options when it is built.
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  if [[ -x "$build_dir/apps/linear_regression" ]]; then
    echo
    exec "$build_dir/apps/linear_regression" --help
  fi
  exit 0
fi

scripts/setup.sh
echo
echo "quickstart: running $build_dir/apps/linear_regression $*"
exec "$build_dir/apps/linear_regression" "$@"
