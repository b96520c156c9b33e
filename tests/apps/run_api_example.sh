#!/usr/bin/env bash
# README.md's API example stays true: its code block is apps/api_example.cpp (after the file's
# leading comment), the program computes its gates right with tfhe_lib_128 (seconds), and it
# refuses arguments.
#   run_api_example.sh API_EXAMPLE README SOURCE
set -uo pipefail
program="$1"
readme="$2"
source_file="$3"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
[[ -x "$program" ]] || { echo "no program at '$program'"; exit 1; }

# The README's block: the ```cpp fence after "## API example" to its closing fence.
awk '/^## API example/ {section = 1; next}
     section && /^```cpp$/ {inside = 1; next}
     inside && /^```$/ {exit}
     inside {print}' "$readme" >"$tmp/readme.cpp"
grep -v '^//' "$source_file" >"$tmp/source.cpp"
[[ -s "$tmp/readme.cpp" ]] || fail "README.md has no cpp block under '## API example'"
diff -u "$tmp/source.cpp" "$tmp/readme.cpp" >"$tmp/diff.txt" ||
  fail "README.md's API example differs from $source_file:
$(cat "$tmp/diff.txt")"

expect 0 "correct"
grep -q 'NAND 1110  MAJ 0111  XOR3 1000  correct' "$tmp/out" ||
  fail "api_example printed: $(cat "$tmp/out")"
expect 2 "api_example takes no arguments" --help
finish api_example
