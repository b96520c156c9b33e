#!/usr/bin/env bash
# README command 2: set up (packages + build, see setup.sh), then run the test suite.
#   scripts/test.sh          the default, fast suite (every test not labelled slow)
#   scripts/test.sh --all    also the tests labelled slow
# Exits nonzero when a test fails.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${BUILD_DIR:-build}"

ctest_args=(--test-dir "$build_dir" --output-on-failure -j1)
case "${1:-}" in
  "") ctest_args+=(-LE slow) ;;
  --all) ;;
  -h|--help)
    echo "usage: scripts/test.sh [--all]   (--all: include the tests labelled slow)"
    exit 0 ;;
  *)
    echo "scripts/test.sh: unknown argument '$1'; expected nothing or --all" >&2
    exit 2 ;;
esac

scripts/setup.sh
echo
echo "test: ctest ${ctest_args[*]}"
ctest "${ctest_args[@]}"
