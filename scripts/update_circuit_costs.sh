#!/usr/bin/env bash
# After a change to circuits/ that changes gate counts or depths: regenerates the cost table
# checked by tests/circuits/test_costs.cpp (circuit_costs.tsv) and the table of
# docs/circuits.md (between its circuit_costs markers) from the built programs.
# Environment: BUILD_DIR (default build). It takes no arguments.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
takes_no_arguments "$@"
build_dir="$BUILD_DIR"
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  echo "update_circuit_costs.sh: $build_dir is not a configured build; run scripts/setup.sh" \
       "(or set BUILD_DIR)" >&2
  exit 1
fi

cmake --build "$build_dir" --target tests_circuits circuit_costs
# Writes the TSV (the docs check in the same tag fails until the table below is updated).
TORUSGATE_WRITE_COSTS=1 "$build_dir/tests/tests_circuits" "[costs]" > /dev/null || true
table="$(mktemp)"
trap 'rm -f "$table"' EXIT
"$build_dir/apps/circuit_costs" > "$table"
python3 - "$table" <<'PY'
import sys
table = open(sys.argv[1]).read().rstrip("\n")
path = "docs/circuits.md"
text = open(path).read()
begin, end = "<!-- circuit_costs: begin -->", "<!-- circuit_costs: end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w").write(head + begin + "\n" + table + "\n" + end + tail)
PY
"$build_dir/tests/tests_circuits" "[costs]"
echo "update_circuit_costs: wrote tests/circuits/circuit_costs.tsv and the table of docs/circuits.md"
